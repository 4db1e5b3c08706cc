#pragma once
// The longest chain of tasks through a Program: dependencies plus the order
// of each rank's streams. With free communication and no collectives, the
// replay's step time equals it; a slower GPU lengthens it by exactly what
// its tasks on the chain lose.
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

struct CriticalPath {
  double seconds = 0;
  std::vector<int> tasks;  // from the first task to the last one of the chain
};

// `task_seconds` indexed by task id. A RECV ends with its SEND.
CriticalPath critical_path(const Program& program, const std::vector<double>& task_seconds);

}  // namespace simtrain
