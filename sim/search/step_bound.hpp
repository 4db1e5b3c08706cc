#pragma once
// A lower bound on a step's time, without building or replaying its Program,
// for the search to rank and prune configurations by. Each term is a floor
// the replay cannot go below: compute and TP collectives (at their links'
// bandwidth, without latency or contention) run one at a time on a rank's
// compute stream; the first micro-batch reaches a stage only after the
// stages before it; the gradients' reduction (at its links' bandwidth), the
// optimizer and ZeRO's gather follow the last backward, as does the last
// backward's way back to stage 0; and the rank's host launches every
// kernel of its passes one after another.
#include "sim/model/cost_model.hpp"
#include "sim/model/workload.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// The largest such floor over pipeline ranks.
double step_lower_bound_seconds(const Scenario& scenario, const Workload& workload, const CostModel& cost_model);

}  // namespace simtrain
