#pragma once
// How long a live step will take, estimated before anything is launched,
// and the watchdog's timeout scaled from it: a healthy run on a slow backend
// must not be stopped for being slow.
#include <string>
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

// The step's duration when each work takes the longest any rank estimated
// for it (`work_seconds_by_rank[rank][work]`, 0 where that rank does not
// run it) and communication is free: the critical path through the
// Program's dependencies and each stream's order. Communication is left
// out: a live run's backend is slow where its compute is (the CPU kernels
// compute tens of GFLOP/s a core, MPI through shared memory moves GB/s),
// and the estimate only has to keep the watchdog from stopping a healthy run.
double estimated_step_seconds(const Program& program, const std::vector<std::vector<double>>& work_seconds_by_rank);

// The watchdog's timeout when --timeout is not given: 300 s, or 3 times the
// estimated step when that is longer. No healthy rank goes a whole step
// without completing a task, and the factor covers an estimate that is
// off by as much as the load of a shared host makes it.
double default_timeout_seconds(double estimated_step_seconds);
std::string default_timeout_rule();  // "3 x the estimated step, at least 5.0 min"

// "450 ms", "12.3 s", "9.2 min", "3.1 h".
std::string duration_text(double seconds);

}  // namespace simtrain
