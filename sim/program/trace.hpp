#pragma once
// Chrome Trace Event JSON of a step (opens in Perfetto and chrome://tracing):
// one process per rank, one thread per stream, every task named; where the
// hosts were simulated, a "host" thread (kHostThread) whose slices are the
// host launching each task's kernels, from when it began to when it went on
// to the next (a task that synchronises holds its slice until the GPU lets
// the host go).
//
// After the events, "otherData" says what the trace is of, so that `simtrain
// compare` can refuse two traces that are not of one Program:
// {"source": "simulation" or "live", "scenario" and "overrides" (a
// TraceOrigin's), "layout": {"tp", "pp", "dp",
// "virtual_stages", "micro_batches"}, "program_hash": program_hash()}, and
// "shown_ranks": [...] when the trace shows some ranks only (TraceRanks).
// A live run's timeline (timeline.live) adds "device" and "dtype" to it and,
// to the args of each compute task it timed, "ops": [{"op", "class",
// "shape", "flops", "bytes", "seconds"}, ...] from the task's Work;
// sim/program/trace_reader.hpp reads them back.
// Throws std::logic_error where a task's op times do not match its Work's ops.
#include <ostream>
#include <string>
#include <vector>

#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"
#include "sim/program/trace_ranks.hpp"

namespace simtrain {

// The thread id of a rank's host track, after the streams' (Stream's values).
inline constexpr int kHostThread = 8;

// The scenario a trace's Program was built from, as the command named it (a
// built-in name or a file), and the --set key=value applied to it (for a
// live run, with its --layers and --micro-batches scaling as --set), so that
// a message can say how to build the same Program again. Empty where the
// writer does not know.
struct TraceOrigin {
  std::string scenario;
  std::vector<std::string> overrides;
};

// 16 hex digits identifying the Program: a 64-bit FNV-1a of every field of
// it (ranks, coordinates, works and their ops, groups, tasks and their
// dependencies), in a fixed byte order. Same Program, same hash, on any
// machine; the cost model, the cluster and the times do not enter it, so a
// simulation under another GPU or a calibrated profile still compares with a
// live run of its Program.
std::string program_hash(const Program& program);

// `ranks` chooses the ranks shown (sim/program/trace_ranks.hpp). A
// representative's process name adds the ranks it stands for ("rank 0 (tp 0,
// pp 0, dp 0) stands for 64 ranks: 0, 8, 16, ..."); a rank it stands for
// shows its times.
void write_chrome_trace(std::ostream& out, const Program& program, const Timeline& timeline,
                        const TraceOrigin& origin = {}, const TraceRanks& ranks = {});

}  // namespace simtrain
