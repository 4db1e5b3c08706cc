#pragma once
// How long a compute op takes on a GPU. A measured kernel-profile database
// (kernels/, another component) implements CostModel; the roofline model
// below (GEMMs by their shape, sim/model/gemm_model.hpp) is the fallback
// when nothing was measured.
#include <string>
#include <vector>

#include "sim/model/workload.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

enum class TimeSource { measured, scaled, roofline };
std::string to_string(TimeSource source);

struct OpTime {
  double seconds = 0;
  TimeSource source = TimeSource::roofline;
};

class CostModel {
public:
  virtual ~CostModel() = default;
  virtual OpTime op_time(const Op& op, Dtype dtype) const = 0;
};

// Fraction of the spec-sheet peak that each op class reaches. One set for
// every GPU and every scenario; docs/gpus.md explains where each value comes
// from. GEMMs are timed from their shape by the GEMM model (gemm_model.hpp),
// at the GPU's sustained tensor clock.
struct RooflineEfficiency {
  // Of the bf16 peak, for fused causal attention, forward and backward (its
  // executed FLOPs: the backward recomputes the scores), at the reference
  // shape (attention_efficiency.hpp: head_dim 128, 8,192 tokens, full waves):
  // cuDNN's fused SDPA measured on H200 (kernels/profiles/H200.json, the
  // medians of its head_dim 128 entries at 4,096 tokens and more, each over
  // its shape factor: 0.52-0.54 forward, 0.42-0.47 backward).
  double attention_forward = 0.54;
  double attention_backward = 0.44;
  // head_dim 64 over head_dim 128, each over its shape factor: the same
  // cuDNN measured on H200 at 2 x 32 x 4,096 (0.42 forward, 0.31 backward of
  // the peak); log2-interpolated between 64 and 128.
  double attention_head_dim_64_forward = 0.81;
  double attention_head_dim_64_backward = 0.73;
  double causal_fraction = 0.5; // share of the s x s score matrix a causal flash kernel computes
  // Of HBM bandwidth, for element-wise, norm, softmax, optimizer kernels and
  // thin GEMMs, on a GPU that states no figure of its own
  // (GpuSpec::hbm_efficiency 0): a device-to-device copy on H200, about 4.3
  // of 4.8 TB/s with reads and writes counted (tests/validation/hardware.json).
  double memory = 4.3 / 4.8;
  double min_kernel_seconds = 3e-6;  // no kernel is shorter than a launch

  // Fused attention `op`'s ({batch, heads, seq, head_dim}) share of the bf16
  // peak on `gpu`: the level of its pass, times the head-size factor, times
  // the shape factor of attention_efficiency.hpp.
  double attention(const GpuSpec& gpu, const Op& op) const;
  // The share of HBM bandwidth memory-bound kernels reach on `gpu`: its own figure, else `memory`.
  double hbm_fraction(const GpuSpec& gpu) const { return gpu.hbm_efficiency > 0 ? gpu.hbm_efficiency : memory; }
};

class RooflineModel : public CostModel {
public:
  explicit RooflineModel(GpuSpec gpu, RooflineEfficiency efficiency = {}) : gpu_(std::move(gpu)), eff_(efficiency) {}
  OpTime op_time(const Op& op, Dtype dtype) const override;

private:
  GpuSpec gpu_;
  RooflineEfficiency eff_;
};

// `seconds` plus the time of each of `ops`, run back to back on one stream,
// added in order (every caller sums the same way, so totals agree to the bit).
double accumulate_op_seconds(double seconds, const CostModel& model, const std::vector<Op>& ops, Dtype dtype);

}  // namespace simtrain
