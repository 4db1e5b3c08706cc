#pragma once
// Chrome Trace Event JSON of a step (opens in Perfetto and chrome://tracing):
// one process per rank, one thread per stream, every task named.
//
// A live run's timeline (timeline.live) adds a top-level "otherData":
// {"source": "live", "device": ..., "dtype": ...} and, to the args of each
// compute task it timed, "ops": [{"op", "class", "shape", "flops", "bytes",
// "seconds"}, ...] from the task's Work; sim/trace_reader.hpp reads them back.
// Throws std::logic_error where a task's op times do not match its Work's ops.
#include <ostream>

#include "program.hpp"
#include "timeline.hpp"

namespace simtrain {

void write_chrome_trace(std::ostream& out, const Program& program, const Timeline& timeline);

}  // namespace simtrain
