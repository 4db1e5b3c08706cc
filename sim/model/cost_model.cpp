#include "sim/model/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "sim/model/attention_efficiency.hpp"
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

double RooflineEfficiency::attention(const GpuSpec& gpu, const Op& op) const {
  // Only a backward executes FLOPs beyond Megatron's count (workload.hpp).
  const bool backward = op.uncounted_flops > 0;
  const int64_t head_dim = op.shape.at(3);
  const double head_dim_64 = backward ? attention_head_dim_64_backward : attention_head_dim_64_forward;
  const double narrow = std::log2(double(kAttentionReferenceHeadDim) / double(std::max<int64_t>(head_dim, 64)));
  const double head_dim_factor = head_dim >= kAttentionReferenceHeadDim
                                     ? attention_wide_head_factor(backward, head_dim)
                                     : 1 + std::min(1.0, narrow) * (head_dim_64 - 1);
  return (backward ? attention_backward : attention_forward) * head_dim_factor *
         attention_shape_factor(op.shape, backward, gpu.sm_count);
}

OpTime RooflineModel::op_time(const Op& op, Dtype dtype) const {
  if (op.op_class == OpClass::gemm) {
    const GemmShape shape{op.shape.at(0) / op.gemm_groups, op.shape.at(1), op.shape.at(2)};
    const GemmTime one = gemm_time(gpu_, shape, op.bytes / double(op.gemm_groups), op_dtype(op, dtype),
                                   eff_.hbm_fraction(gpu_), eff_.min_kernel_seconds);
    const double seconds =
        grouped_gemm_seconds(one, op.gemm_groups, op.gemm_streams, gpu_.sm_count, eff_.min_kernel_seconds);
    return {std::max(seconds, eff_.min_kernel_seconds), TimeSource::roofline};
  }
  double compute_seconds = 0;
  if (op.op_class == OpClass::attention) {
    compute_seconds =
        (op.flops + op.uncounted_flops) * eff_.causal_fraction / (gpu_.peak_bf16_flops * eff_.attention(gpu_, op));
  }
  const double memory_seconds = op.bytes / (gpu_.hbm_bytes_per_second * eff_.hbm_fraction(gpu_));
  return {std::max({compute_seconds, memory_seconds, eff_.min_kernel_seconds}), TimeSource::roofline};
}

double accumulate_op_seconds(double seconds, const CostModel& model, const std::vector<Op>& ops, Dtype dtype) {
  for (const Op& op : ops) seconds += model.op_time(op, dtype).seconds;
  return seconds;
}

}  // namespace simtrain
