#pragma once
// How far a simulated step is from a measured one: two traces of the same
// Program (sim/program/trace_reader.hpp), task by task, summarised per task kind.
//
// Tasks are matched by (rank, kind, name). Names repeat within a rank (the TP
// collectives of every micro-batch, the DP buckets of equal size, the
// gradient codecs), so the k-th task of a (rank, kind, name) in start order
// matches the k-th of the other trace.
//
// The relative error of a duration is (live - simulated) / live: positive
// where the simulator is optimistic. Tasks whose live duration is 0 have none
// (both 0 counts as 0 error); they are counted in zero_live.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/program/trace_reader.hpp"

namespace simtrain {

struct KindComparison {
  TaskKind kind = TaskKind::F;
  int matched = 0;                // tasks found in both traces
  int zero_live = 0;              // matched, live duration 0 and simulated not: no relative error
  double median_error = 0;        // signed, over matched tasks with an error
  double worst_error = 0;         // largest by absolute value, signed
  std::string worst_task;         // its name
  int worst_rank = -1;
  double simulated_seconds = 0;   // sums of the matched tasks' durations
  double live_seconds = 0;
  double sum_error = 0;           // (live_seconds - simulated_seconds) / live_seconds; 0 where both are 0
};

struct TraceComparison {
  std::string simulated_source, live_source;  // the traces' files
  int world_size = 0;
  std::vector<KindComparison> kinds;  // kinds with a matched task, in TaskKind order, RECV left out
  // A simulated RECV spans its SEND's transfer (it is passive and pre-posted),
  // a live one what the receiver waited: listed apart from the rest.
  std::optional<KindComparison> recv;
  int matched = 0;                    // tasks matched, RECV included
  int only_simulated = 0;             // tasks without a partner in the other trace
  int only_live = 0;
  std::vector<std::string> only_simulated_examples;  // "rank 3: s1 F mb4", at most 5 of each
  std::vector<std::string> only_live_examples;
  double simulated_step_seconds = 0;
  double live_step_seconds = 0;
  double step_error = 0;              // (live - simulated) / live
};

// Throws InputError, naming the file and the reason, unless `simulated` is a
// simulation's trace and `live` a live run's (their otherData.source), both
// of one Program (their otherData.program_hash). The message for traces of
// different Programs says how to simulate the live run's.
void check_comparable(const RecordedStep& simulated, const RecordedStep& live);

// Throws InputError when the traces have different world sizes, or when not
// a single task matches.
TraceComparison compare_traces(const RecordedStep& simulated, const RecordedStep& live);

// A table, one line per task kind, then the step times and unmatched tasks.
std::string to_text(const TraceComparison& comparison);
nlohmann::json to_json(const TraceComparison& comparison);

}  // namespace simtrain
