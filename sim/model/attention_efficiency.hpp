#pragma once
// How fused attention's share of the bf16 peak changes with its shape
// (docs/gpus.md, "Fused attention by its shape"). The level comes from
// H200's measurement (RooflineEfficiency in cost_model.hpp: head_dim 128,
// 8,192 tokens, full waves); this file holds what scales it to any shape:
//   sequence: the published speeds of cuDNN's fused attention on H100 SXM
//     (bf16, batch x sequence = 16k tokens, 2,048 hidden), forward causal at
//     head_dim 64, 128, 256 and backward (published without the causal mask
//     only) at 64 and 128, each over its own speed at 8,192 tokens;
//   waves: a kernel runs one tile of 128 query rows (forward) or key rows
//     (backward) of one head per SM at a time, so batch x heads x
//     ceil(seq / 128) tiles run in waves of one per SM, as a GEMM's do.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace simtrain {

// Shah et al., "FlashAttention-3: Fast and Accurate Attention with Asynchrony
// and Low-precision" (arXiv 2407.08608), Figures 5 and 6: the cuDNN bars,
// TFLOP/s on an H100 80GB SXM5 at each of kPublishedAttentionSequences
// (FLOPs counted as FlashAttention's benchmarks count them: the causal half
// of the scores, a backward 2.5 forwards).
struct PublishedAttentionSpeeds {
  int64_t head_dim = 0;
  bool backward = false;
  bool causal = false;
  std::array<double, 6> tflops{};
};
inline constexpr std::array<int64_t, 6> kPublishedAttentionSequences{512, 1024, 2048, 4096, 8192, 16384};
std::span<const PublishedAttentionSpeeds> published_attention_speeds();

// The shape RooflineEfficiency's attention levels are measured at: head_dim
// 128, 8,192 tokens (the median of H200's entries), in 2,048 tiles on 132 SMs
// (H200's entries and the published benchmark alike: 16 waves, the last one 0.52 full).
inline constexpr int64_t kAttentionReferenceSequence = 8192;
inline constexpr int64_t kAttentionReferenceHeadDim = 128;
inline constexpr int64_t kAttentionReferenceTiles = 2048;
inline constexpr int kAttentionReferenceSmCount = 132;
inline constexpr int64_t kAttentionTileRows = 128;  // FlashAttention-2/3's and cuDNN's Br on Hopper

// The published speed at `head_dim` and `sequence` over the same at 8,192
// tokens: linear in log2(sequence) between the published lengths and in
// log2(head_dim) between the published head sizes; held at the nearest
// published point outside them (below 512 and above 16k tokens, head_dim
// below 64 or above 256, or 128 for a backward).
double attention_sequence_factor(bool backward, int64_t head_dim, int64_t sequence);

// The published forward speed at `head_dim` over head_dim 128's, at 8,192
// tokens, for head_dim above 128 (log2-interpolated, held above 256); 1 at
// 128 and below, and for a backward (none published above 128).
double attention_wide_head_factor(bool backward, int64_t head_dim);

// Of SMs busy over the kernel's waves: tiles / (ceil(tiles / SMs) x SMs).
double attention_wave_factor(int64_t tiles, int sm_count);

// An attention op's {batch, heads, seq, head_dim}: the sequence factor times
// its waves on `sm_count` SMs over the reference's. The head-size factor
// below 128 is measured (RooflineEfficiency), not part of this.
double attention_shape_factor(const std::vector<int64_t>& shape, bool backward, int sm_count);

}  // namespace simtrain
