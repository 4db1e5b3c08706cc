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
//   included) over time and the bf16 peak, each over its shape factor
//   (attention_efficiency.hpp), for entries of one head size and sequences of
//   at least kLongSequence tokens;
// - where no kernel profile of a GPU exists, its sustained tensor clock from
//   a published sustained-load GEMM (the clock at which the GEMM model gives
//   its measured rate: MI300X on AMD's Max-Achievable FLOPs), or from one
//   published layer-level measurement: the clock at which the roofline
//   model gives that layer's forward and backward compute the time measured
//   (docs/gpus.md: A100 on Korthikanti et al.'s Table 4 layer);
// - else a measured GPU's sustained clocks carried over by its tensor clock.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/cost_model.hpp"
#include "sim/model/gemm_model.hpp"
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

// Where nothing of a GPU's own under sustained load is published: the
// measured GPU's sustained clock for `dtype` as the same fraction of the
// target's tensor clock (docs/gpus.md: the power limit holds the clock at the
// same fraction of the clock the peak is computed at; H100, H800, B200 and
// GB200 from H200).
double carried_over_sustained_clock_hz(const GpuSpec& measured, const GpuSpec& target, Dtype dtype);

// One GEMM measured under sustained load and published with its source.
struct PublishedGemm {
  GemmShape shape;
  Dtype dtype = Dtype::bf16;
  double measured_flops = 0;
  std::string source;
  std::vector<GemmTile> tiles;  // the kernel's tile where the publication names it; empty: large_gemm_tiles()
};

// The sustained clock (Hz) of `gemm.dtype` at which the GEMM model gives
// `gemm` its measured FLOP/s with its tiles (the GPU's achievable-matmul
// ceilings set aside). Throws InputError (naming the source) where no clock up to the
// tensor clock reaches it.
double derive_sustained_clock_hz_from_gemm(GpuSpec gpu, const PublishedGemm& gemm);

// A STREAM-like copy's published rate on a GPU (reads and writes counted)
// and the GPU's spec-sheet HBM bandwidth.
struct PublishedCopy {
  double copy_bytes_per_second = 0;
  double spec_bytes_per_second = 0;
};

// A GPU's HBM efficiency (GpuSpec::hbm_efficiency) from a benchmark
// published for it and for H200: H200's measured share
// (RooflineEfficiency::memory) times the GPU's published share over H200's,
// so that the benchmark's own level, below or above the copy measured here,
// cancels (docs/gpus.md: A100, H100 and MI300X from the Azure AI
// Benchmarking Guide's BabelStream).
double hbm_efficiency_from_published_copy(const PublishedCopy& gpu, const PublishedCopy& h200);

// Fused attention measured on a GPU (RooflineEfficiency's levels): the
// medians of each entry's share of the bf16 peak over its shape factor
// (attention_efficiency.hpp).
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
