#pragma once
// The longest chain of tasks through a Program: dependencies plus the order
// of each rank's streams. With free communication and no collectives, the
// replay's step time equals it; a slower GPU lengthens it by exactly what
// its tasks on the chain lose. The same walk over a run's timeline gives
// the chain that held that run up (what the GUI highlights).
#include <vector>

#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"

namespace simtrain {

struct CriticalPath {
  double seconds = 0;
  std::vector<int> tasks;  // from the first task to the last one of the chain
};

// Indexed by task id: what must end before the task starts, its dependencies
// then the task issued before it on the same stream of its rank. A RECV is
// passive (queued on no stream): it has no stream predecessor and is none.
std::vector<std::vector<int>> task_predecessors(const Program& program);

// `task_seconds` indexed by task id. A RECV ends with its SEND.
CriticalPath critical_path(const Program& program, const std::vector<double>& task_seconds);

// The chain as `timeline` ran: from the task that ended last, back through,
// at each task, the predecessor that ended last. Tasks that never ran are not on it.
CriticalPath critical_path(const Program& program, const Timeline& timeline);

}  // namespace simtrain
