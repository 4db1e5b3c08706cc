#pragma once
// The limits of sim/base/limits.hpp applied to a whole scenario: its model,
// its cluster and the Program it would make.
#include <string>

namespace simtrain {

struct Scenario;

// Upper estimate of the tasks build_program makes for `s`, from its sizes:
// ranks x pipeline actions x tasks per action, plus the gradient buckets.
double estimated_tasks(const Scenario& s);

// Upper estimate of the Program's memory: estimated_tasks x
// limits::program_bytes_per_task.
double estimated_program_bytes(const Scenario& s);

// Refuses a scenario whose model, cluster or Program exceeds the limits;
// `s` has passed the divisibility checks (data parallel size filled in).
void check_limits(const Scenario& s, const std::string& file);

}  // namespace simtrain
