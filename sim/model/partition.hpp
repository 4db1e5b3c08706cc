#pragma once
// How many transformer layers each model stage holds: the scenario's layout
// (Megatron-LM's rules, sim/scenario/pipeline_layout.hpp), or with
// pipeline_layers "auto" a split over every virtual stage that balances
// stage times.
#include <vector>

#include "sim/model/cost_model.hpp"
#include "sim/model/workload.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// Layers of each model stage (p x v entries, stage = chunk x p + pipeline rank).
// "auto" times units with the scenario's cost model (make_cost_model).
std::vector<int> stage_layer_counts(const Scenario& scenario, const Workload& workload);

// Splits `layers` identical layers of `layer_seconds` over stages whose fixed
// work (embedding, head) takes `extra_seconds`, minimising the slowest stage:
// every stage gets one layer, then each further layer goes to the stage that
// is fastest so far (the first of equals). Stage times then differ by at most
// one layer's time, unless a stage's fixed work alone exceeds that.
std::vector<int> balance_layers(int layers, const std::vector<double>& extra_seconds, double layer_seconds);

// Splits layers of the given times, in order, into consecutive runs, one a
// stage (each of at least one layer, the stages' fixed work `extra_seconds`),
// minimising the slowest stage: for layers of different kinds (dense and MoE).
// Of the partitions achieving it, each stage takes as many layers as it can.
std::vector<int> balance_layer_sequence(const std::vector<double>& layer_seconds,
                                        const std::vector<double>& extra_seconds);

// One micro-batch through a unit: forward, backward and recompute passes.
double unit_seconds(const UnitWork& unit, const CostModel& cost_model, Dtype dtype);

}  // namespace simtrain
