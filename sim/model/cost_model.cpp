#include "sim/model/cost_model.hpp"

#include <algorithm>

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
  double compute_seconds = 0;
  if (op.op_class == OpClass::gemm) {
    const double peak = dtype == Dtype::fp8 && gpu_.peak_fp8_flops > 0 ? gpu_.peak_fp8_flops : gpu_.peak_bf16_flops;
    compute_seconds = op.flops / (peak * eff_.gemm);
  } else if (op.op_class == OpClass::attention) {
    compute_seconds = op.flops * eff_.causal_fraction / (gpu_.peak_bf16_flops * eff_.attention);
  }
  const double memory_seconds = op.bytes / (gpu_.hbm_bytes_per_second * eff_.memory);
  return {std::max({compute_seconds, memory_seconds, eff_.min_kernel_seconds}), TimeSource::roofline};
}

double accumulate_op_seconds(double seconds, const CostModel& model, const std::vector<Op>& ops, Dtype dtype) {
  for (const Op& op : ops) seconds += model.op_time(op, dtype).seconds;
  return seconds;
}

}  // namespace simtrain
