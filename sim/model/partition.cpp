#include "sim/model/partition.hpp"

#include "sim/model/profiled_cost_model.hpp"

namespace simtrain {

double unit_seconds(const UnitWork& unit, const CostModel& cost_model, Dtype dtype) {
  double seconds = 0;
  for (const Pass* pass : {&unit.forward, &unit.backward_input, &unit.backward_weight, &unit.recompute})
    seconds = accumulate_op_seconds(seconds, cost_model, pass->ops, dtype);
  return seconds;
}

std::vector<int> balance_layers(int layers, const std::vector<double>& extra_seconds, double layer_seconds) {
  const size_t stages = extra_seconds.size();
  std::vector<int> counts(stages, 1);
  std::vector<double> seconds(stages);
  for (size_t i = 0; i < stages; ++i) seconds[i] = extra_seconds[i] + layer_seconds;
  for (int layer = static_cast<int>(stages); layer < layers; ++layer) {
    size_t fastest = 0;
    for (size_t i = 1; i < stages; ++i)
      if (seconds[i] < seconds[fastest]) fastest = i;
    ++counts[fastest];
    seconds[fastest] += layer_seconds;
  }
  return counts;
}

std::vector<int> stage_layer_counts(const Scenario& s, const Workload& w) {
  const int stages = static_cast<int>(s.parallel.pipeline * s.virtual_stages());
  const int layers = static_cast<int>(s.model.num_layers);
  if (!s.parallel.balance_pipeline_layers) return {s.parallel.stage_layers.begin(), s.parallel.stage_layers.end()};
  if (stages == 1) return {layers};
  const std::unique_ptr<CostModel> cost_model = make_cost_model(s);
  const Dtype dtype = s.training.dtype;
  std::vector<double> extra(stages, 0);
  extra.front() += unit_seconds(w.embedding, *cost_model, dtype);
  extra.back() += unit_seconds(w.head, *cost_model, dtype);
  return balance_layers(layers, extra, unit_seconds(w.layer, *cost_model, dtype));
}

}  // namespace simtrain
