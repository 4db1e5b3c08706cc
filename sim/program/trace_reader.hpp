#pragma once
// Reads back a Chrome trace written by write_chrome_trace (the CLI's --trace,
// or the live runner): every rank's tasks with when they ran, as a Program
// and its Timeline, so that the report's time splits, the GUI and `compare`
// treat a recorded step like a simulated one.
//
// A trace carries no groups or dependencies: the Program read back has none
// (Program::deps is empty for every task), and keeps the names it recorded
// (Program::recorded_names). A simulated trace carries no works either
// (compute tasks have work = -1). Its "otherData" (sim/program/trace.hpp) says where
// it comes from and of what Program; traces written before simtrain recorded
// that have none. A live trace ("otherData": {"source": "live", "device":
// ..., "dtype": ...}) gives the Timeline its LiveRecord, and each compute task whose args list "ops" (name, class,
// shape, flops, bytes, seconds) a Work holding those Ops, shared by the tasks
// that ran the same ops, with each op's seconds in live->op_seconds. Ranks and
// their coordinates come from the process names ("rank 17 (tp 1, pp 0, dp 2)").
// A trace of some ranks only (otherData.shown_ranks, --trace-ranks) is refused.
// Where it has host tracks (simulated hosts), the Timeline gets each rank's
// launches as its own host's (host_of_rank[r] = r), so that host_track()
// (sim/program/host_track.hpp) gives back the slices it was written from.
#include <istream>
#include <string>

#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"
#include "sim/program/trace.hpp"

namespace simtrain {

struct RecordedStep {
  Program program;
  Timeline timeline;
  std::string source;  // the trace it was read from, for messages
  // From its otherData, empty where the trace does not say:
  std::string made_by;       // otherData.source: "simulation", "live" (or another tool's word)
  std::string program_hash;  // program_hash() of the Program it is of
  TraceOrigin origin;        // the scenario and --set it was built from
};

// `source` names the input in messages. Throws InputError naming the event
// and the field for malformed input.
RecordedStep read_chrome_trace(std::istream& in, const std::string& source);
RecordedStep read_chrome_trace_file(const std::string& path);

}  // namespace simtrain
