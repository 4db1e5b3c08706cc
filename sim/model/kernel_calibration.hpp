#pragma once
// How the cost model's measured constants are derived from a kernel-profile
// database (bench/roofline_accuracy.cpp --derive prints them; the tests check
// the built-in figures against the committed databases):
// - a GPU's sustained tensor clocks (GpuSpec): the clock at which the GEMM
//   model (gemm_model.hpp) gives the median measured time of the database's
//   large GEMMs, those whose M, N and K are all at least kLargeGemmDimension.
//   Such GEMMs fill every SM for many waves, so their time is the K loop's
//   rate under sustained load;
// - fused attention's efficiencies (RooflineEfficiency): the medians, forward
//   and backward, of the executed FLOPs (causal, the backward's recomputation
//   included) over time and the bf16 peak, for entries of one head size and
//   sequences of at least kLongSequence tokens;
// - where no kernel profile of a GPU exists, its sustained tensor clock from
//   one published layer-level measurement: the clock at which the roofline
//   model gives that layer's forward and backward compute the time measured
//   (docs/gpus.md: A100 on Korthikanti et al.'s Table 4 layer).
#include <cstdint>
#include <string>

#include "sim/model/cost_model.hpp"
#include "sim/model/profile_database.hpp"
#include "sim/model/workload.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

inline constexpr int64_t kLargeGemmDimension = 4096;
inline constexpr int64_t kLongSequence = 4096;

struct LargeGemmFit {
  int gemms = 0;                    // the database's large GEMMs of the dtype
  double median_measured_flops = 0;  // their median FLOP/s
  double median_model_ratio = 0;    // median of modelled / measured time with `gpu` as it is
};

// Over the large GEMMs of `dtype` in `database`; gemms = 0 where there are none.
LargeGemmFit fit_large_gemms(const ProfileDatabase& database, const GpuSpec& gpu, Dtype dtype);

// The sustained clock (Hz) at which fit_large_gemms' median ratio is 1.
// Throws InputError (naming the database) where it has no large GEMM of `dtype`.
double derive_sustained_clock_hz(const ProfileDatabase& database, GpuSpec gpu, Dtype dtype);

struct AttentionFit {
  int forward_entries = 0, backward_entries = 0;
  double forward_efficiency = 0, backward_efficiency = 0;  // 0 where there is no such entry
};

// Over the attention entries ({batch, heads, seq, head_dim}) of `head_dim`
// with seq >= kLongSequence.
AttentionFit fit_attention(const ProfileDatabase& database, const GpuSpec& gpu, int64_t head_dim);

struct LayerComputeSeconds {
  double forward = 0;
  double backward = 0;  // backward-input and backward-weight passes
};

// One layer's compute on one TP rank, each pass's ops back to back.
LayerComputeSeconds layer_compute_seconds(const CostModel& model, const UnitWork& layer, Dtype dtype);

// The sustained tensor clock (Hz, bf16 and fp8 alike) at which
// RooflineModel(gpu) gives `layer`'s forward and backward compute
// `compute_seconds` in all. Throws InputError (naming `source`) where no clock
// up to the tensor clock reaches it.
double derive_sustained_clock_hz_from_layer(const UnitWork& layer, Dtype dtype, GpuSpec gpu, double compute_seconds,
                                            const std::string& source);

}  // namespace simtrain
