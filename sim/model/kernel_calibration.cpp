#include "sim/model/kernel_calibration.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/base/median.hpp"
#include "sim/base/text_format.hpp"
#include "sim/model/attention_efficiency.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/gemm_model.hpp"

namespace simtrain {

namespace {

bool is_large_gemm(const ProfileEntry& entry, Dtype dtype) {
  if (entry.op.op_class != OpClass::gemm || entry.dtype != dtype) return false;
  return std::ranges::all_of(entry.op.shape, [](int64_t size) { return size >= kLargeGemmDimension; });
}

}  // namespace

LargeGemmFit fit_large_gemms(const ProfileDatabase& database, const GpuSpec& gpu, Dtype dtype) {
  const RooflineModel model(gpu);
  std::vector<double> measured_flops, ratios;
  for (const ProfileEntry& entry : database.entries) {
    if (!is_large_gemm(entry, dtype)) continue;
    const double modelled = model.op_time(entry.op, entry.dtype).seconds;
    measured_flops.push_back(entry.op.flops / entry.median_seconds);
    ratios.push_back(modelled / entry.median_seconds);
  }
  if (ratios.empty()) return {};
  return {int(ratios.size()), median(measured_flops), median(ratios)};
}

double derive_sustained_clock_hz(const ProfileDatabase& database, GpuSpec gpu, Dtype dtype) {
  if (fit_large_gemms(database, gpu, dtype).gemms == 0)
    throw InputError(database.source, "entries",
                     "no " + to_string(dtype) + " GEMM with M, N and K of at least " +
                         std::to_string(kLargeGemmDimension) + " to derive a sustained clock from");
  // The measured ceilings bound the model from above; the clock alone is derived.
  gpu.achievable_matmul_bf16_flops = gpu.achievable_matmul_fp8_flops = 0;
  double low = 0.05 * gpu.tensor_clock_hz, high = gpu.tensor_clock_hz;
  for (int i = 0; i < 60; ++i) {  // the model's time falls as the clock rises
    const double clock = (low + high) / 2;
    gpu.sustained_tensor_clock_hz = gpu.sustained_fp8_tensor_clock_hz = clock;
    (fit_large_gemms(database, gpu, dtype).median_model_ratio > 1 ? low : high) = clock;
  }
  return (low + high) / 2;
}

AttentionFit fit_attention(const ProfileDatabase& database, const GpuSpec& gpu, int64_t head_dim) {
  const RooflineEfficiency efficiency;
  std::vector<double> forward, backward;
  for (const ProfileEntry& entry : database.entries) {
    const std::vector<int64_t>& shape = entry.op.shape;
    if (entry.op.op_class != OpClass::attention || shape.size() != 4 || shape[3] != head_dim ||
        shape[2] < kLongSequence)
      continue;
    // As the roofline tells them apart: only a backward executes FLOPs beyond Megatron's count.
    const bool is_backward = entry.op.uncounted_flops > 0;
    const double executed_flops = (entry.op.flops + entry.op.uncounted_flops) * efficiency.causal_fraction;
    const double measured = executed_flops / entry.median_seconds / gpu.peak_bf16_flops;
    (is_backward ? backward : forward).push_back(measured / attention_shape_factor(shape, is_backward, gpu.sm_count));
  }
  return {int(forward.size()), int(backward.size()), median(forward), median(backward)};
}

double carried_over_sustained_clock_hz(const GpuSpec& measured, const GpuSpec& target, Dtype dtype) {
  return target.tensor_clock_hz * sustained_clock_hz(measured, dtype) / measured.tensor_clock_hz;
}

double derive_sustained_clock_hz_from_gemm(GpuSpec gpu, const PublishedGemm& gemm) {
  const bool fp8 = gemm.dtype == Dtype::fp8;
  const double flops = 2.0 * gemm.shape.m * gemm.shape.n * gemm.shape.k, bytes = gemm_bytes(gemm.shape, gemm.dtype);
  const std::span<const GemmTile> tiles = gemm.tiles.empty() ? large_gemm_tiles() : std::span(gemm.tiles);
  const double hbm_fraction = RooflineEfficiency{}.hbm_fraction(gpu);
  const auto modelled_flops_at = [&](double clock_hz) {
    (fp8 ? gpu.sustained_fp8_tensor_clock_hz : gpu.sustained_tensor_clock_hz) = clock_hz;
    return flops / gemm_time(gpu, gemm.shape, bytes, gemm.dtype, hbm_fraction, RooflineEfficiency{}.min_kernel_seconds, tiles).seconds;
  };
  // The measured ceilings bound the model from above; the clock alone is derived.
  gpu.achievable_matmul_bf16_flops = gpu.achievable_matmul_fp8_flops = 0;
  double low = 0.05 * gpu.tensor_clock_hz, high = gpu.tensor_clock_hz;
  if (modelled_flops_at(high) < gemm.measured_flops)
    throw InputError(gemm.source, "gemm",
                     format("no sustained clock up to the tensor clock gives %.1f TFLOP/s", gemm.measured_flops * 1e-12));
  for (int i = 0; i < 60; ++i) {  // the modelled rate rises with the clock
    const double clock = (low + high) / 2;
    (modelled_flops_at(clock) < gemm.measured_flops ? low : high) = clock;
  }
  return (low + high) / 2;
}

double hbm_efficiency_from_published_copy(const PublishedCopy& gpu, const PublishedCopy& h200) {
  return RooflineEfficiency{}.memory * (gpu.copy_bytes_per_second / gpu.spec_bytes_per_second) /
         (h200.copy_bytes_per_second / h200.spec_bytes_per_second);
}

LayerComputeSeconds layer_compute_seconds(const CostModel& model, const UnitWork& layer, Dtype dtype) {
  const double backward_input = accumulate_op_seconds(0, model, layer.backward_input.ops, dtype);
  return {accumulate_op_seconds(0, model, layer.forward.ops, dtype),
          accumulate_op_seconds(backward_input, model, layer.backward_weight.ops, dtype)};
}

double derive_sustained_clock_hz_from_layer(const UnitWork& layer, Dtype dtype, GpuSpec gpu, double compute_seconds,
                                            const std::string& source) {
  const auto total_at = [&](double clock_hz) {
    gpu.sustained_tensor_clock_hz = gpu.sustained_fp8_tensor_clock_hz = clock_hz;
    const LayerComputeSeconds seconds = layer_compute_seconds(RooflineModel(gpu), layer, dtype);
    return seconds.forward + seconds.backward;
  };
  double low = 0.05 * gpu.tensor_clock_hz, high = gpu.tensor_clock_hz;
  if (total_at(high) > compute_seconds || total_at(low) < compute_seconds)
    throw InputError(source, "layer",
                     format("no sustained clock up to the tensor clock gives its compute %.2f ms", compute_seconds * 1e3));
  for (int i = 0; i < 60; ++i) {  // the layer's time falls as the clock rises
    const double clock = (low + high) / 2;
    (total_at(clock) > compute_seconds ? low : high) = clock;
  }
  return (low + high) / 2;
}

}  // namespace simtrain
