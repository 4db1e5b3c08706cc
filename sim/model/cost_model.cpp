#include "sim/model/cost_model.hpp"

#include <algorithm>

#include "sim/model/gemm_model.hpp"

namespace simtrain {

std::string to_string(TimeSource source) {
  switch (source) {
    case TimeSource::measured: return "measured";
    case TimeSource::scaled: return "scaled";
    case TimeSource::roofline: return "roofline";
  }
  return "?";
}

OpTime RooflineModel::op_time(const Op& op, Dtype dtype) const {
  if (op.op_class == OpClass::gemm) {
    const GemmShape shape{op.shape.at(0), op.shape.at(1), op.shape.at(2)};
    const double seconds = gemm_time(gpu_, shape, op.bytes, op_dtype(op, dtype), eff_.memory).seconds;
    return {std::max(seconds, eff_.min_kernel_seconds), TimeSource::roofline};
  }
  double compute_seconds = 0;
  if (op.op_class == OpClass::attention) {
    // Only a backward executes FLOPs beyond Megatron's count (workload.hpp).
    const double efficiency = op.uncounted_flops > 0 ? eff_.attention_backward : eff_.attention_forward;
    compute_seconds = (op.flops + op.uncounted_flops) * eff_.causal_fraction / (gpu_.peak_bf16_flops * efficiency);
  }
  const double memory_seconds = op.bytes / (gpu_.hbm_bytes_per_second * eff_.memory);
  return {std::max({compute_seconds, memory_seconds, eff_.min_kernel_seconds}), TimeSource::roofline};
}

double accumulate_op_seconds(double seconds, const CostModel& model, const std::vector<Op>& ops, Dtype dtype) {
  for (const Op& op : ops) seconds += model.op_time(op, dtype).seconds;
  return seconds;
}

}  // namespace simtrain
