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

namespace {

// The partition of `layer_seconds` into stages of at most `bound` seconds,
// each stage taking as many layers as fit while leaving one for each later
// stage; empty where none exists. Taking most is never worse for the stages
// after, so it finds a partition whenever one exists.
std::vector<int> fill_stages(const std::vector<double>& layer_seconds, const std::vector<double>& extra_seconds,
                             double bound) {
  const size_t stages = extra_seconds.size(), layers = layer_seconds.size();
  std::vector<int> counts;
  size_t next = 0;
  for (size_t stage = 0; stage < stages; ++stage) {
    const bool last = stage + 1 == stages;  // takes what is left
    const size_t end_limit = last ? layers : layers - (stages - stage - 1);
    double seconds = extra_seconds[stage] + layer_seconds[next];
    size_t end = next + 1;
    while (end < end_limit && (last || seconds + layer_seconds[end] <= bound)) seconds += layer_seconds[end++];
    if (seconds > bound) return {};
    counts.push_back(static_cast<int>(end - next));
    next = end;
  }
  return counts;
}

}  // namespace

std::vector<int> balance_layer_sequence(const std::vector<double>& layer_seconds,
                                        const std::vector<double>& extra_seconds) {
  double low = 0, high = 0;  // no partition within low; one within high (twice the whole, whatever the rounding)
  for (double seconds : layer_seconds) high += 2 * seconds;
  for (double seconds : extra_seconds) high += 2 * seconds;
  // Bisection on the slowest stage's time, to a relative 1e-12 (about 40 rounds).
  while (high - low > 1e-12 * high) {
    const double middle = 0.5 * (low + high);
    (fill_stages(layer_seconds, extra_seconds, middle).empty() ? low : high) = middle;
  }
  return fill_stages(layer_seconds, extra_seconds, high);
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
  if (w.dense_layers.empty()) return balance_layers(layers, extra, unit_seconds(w.layer, *cost_model, dtype));
  const double moe_seconds = unit_seconds(w.layer, *cost_model, dtype);
  const double dense_seconds = unit_seconds(w.dense_layer, *cost_model, dtype);
  std::vector<double> layer_seconds;
  for (bool dense : w.dense_layers) layer_seconds.push_back(dense ? dense_seconds : moe_seconds);
  return balance_layer_sequence(layer_seconds, extra);
}

}  // namespace simtrain
