#pragma once
// Chrome Trace Event JSON of a step (opens in Perfetto and chrome://tracing):
// one process per rank, one thread per stream, every task named.
#include <ostream>

#include "program.hpp"
#include "timeline.hpp"

namespace simtrain {

void write_chrome_trace(std::ostream& out, const Program& program, const Timeline& timeline);

}  // namespace simtrain
