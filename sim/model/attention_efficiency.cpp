#include "sim/model/attention_efficiency.hpp"

#include <algorithm>
#include <cmath>

namespace simtrain {

namespace {

// The cuDNN bars of arXiv 2407.08608 (FlashAttention-3), read off the labels
// above them: Figure 5 (forward, bf16; with the causal mask: panels b, d, f)
// and Figure 6 (backward, bf16; published without the causal mask only).
// 512, 1k, 2k, 4k, 8k and 16k tokens; batch x sequence = 16k, hidden 2,048.
constexpr PublishedAttentionSpeeds kCudnnH100[] = {
    {64, false, true, {225, 288, 334, 363, 379, 388}},
    {128, false, true, {315, 410, 484, 518, 529, 539}},
    {256, false, true, {308, 391, 450, 483, 497, 509}},
    {64, true, false, {266, 348, 395, 417, 432, 433}},
    {128, true, false, {305, 408, 465, 499, 518, 516}},
};

// Where x falls between xs[i] and xs[i + 1] in log2 (held at the ends): {i, fraction}.
template <size_t N>
std::pair<size_t, double> bracket(const std::array<int64_t, N>& xs, int64_t x) {
  if (x <= xs.front()) return {0, 0};
  if (x >= xs.back()) return {N - 2, 1};
  size_t i = 0;
  while (xs[i + 1] < x) ++i;
  return {i, std::log2(double(x) / double(xs[i])) / std::log2(double(xs[i + 1]) / double(xs[i]))};
}

double speed_at(const PublishedAttentionSpeeds& curve, int64_t sequence) {
  const auto [i, t] = bracket(kPublishedAttentionSequences, sequence);
  return curve.tflops[i] + t * (curve.tflops[i + 1] - curve.tflops[i]);
}

double own_sequence_factor(const PublishedAttentionSpeeds& curve, int64_t sequence) {
  return speed_at(curve, sequence) / speed_at(curve, kAttentionReferenceSequence);
}

// The published curves of one pass, by head size.
std::vector<const PublishedAttentionSpeeds*> curves_of(bool backward) {
  std::vector<const PublishedAttentionSpeeds*> curves;
  for (const PublishedAttentionSpeeds& curve : kCudnnH100)
    if (curve.backward == backward) curves.push_back(&curve);
  return curves;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::span<const PublishedAttentionSpeeds> published_attention_speeds() { return kCudnnH100; }

double attention_sequence_factor(bool backward, int64_t head_dim, int64_t sequence) {
  const std::vector<const PublishedAttentionSpeeds*> curves = curves_of(backward);
  if (head_dim <= curves.front()->head_dim) return own_sequence_factor(*curves.front(), sequence);
  if (head_dim >= curves.back()->head_dim) return own_sequence_factor(*curves.back(), sequence);
  size_t i = 0;
  while (curves[i + 1]->head_dim < head_dim) ++i;
  const double t = std::log2(double(head_dim) / double(curves[i]->head_dim)) /
                   std::log2(double(curves[i + 1]->head_dim) / double(curves[i]->head_dim));
  const double low = own_sequence_factor(*curves[i], sequence), high = own_sequence_factor(*curves[i + 1], sequence);
  return low + t * (high - low);
}

double attention_wide_head_factor(bool backward, int64_t head_dim) {
  if (backward || head_dim <= kAttentionReferenceHeadDim) return 1;
  const std::vector<const PublishedAttentionSpeeds*> forward = curves_of(false);  // head_dim 64, 128, 256
  const double at_256 = speed_at(*forward[2], kAttentionReferenceSequence) /
                        speed_at(*forward[1], kAttentionReferenceSequence);
  const double t = std::min(1.0, std::log2(double(head_dim) / double(kAttentionReferenceHeadDim)));
  return 1 + t * (at_256 - 1);
}

double attention_wave_factor(int64_t tiles, int sm_count) {
  if (sm_count <= 0) return 1;  // a GPU given without its SMs: no waves to count
  return double(tiles) / double(ceil_div(tiles, sm_count) * sm_count);
}

double attention_shape_factor(const std::vector<int64_t>& shape, bool backward, int sm_count) {
  const int64_t batch = shape.at(0), heads = shape.at(1), sequence = shape.at(2), head_dim = shape.at(3);
  const int64_t tiles = batch * heads * ceil_div(sequence, kAttentionTileRows);
  return attention_sequence_factor(backward, head_dim, sequence) * attention_wave_factor(tiles, sm_count) /
         attention_wave_factor(kAttentionReferenceTiles, kAttentionReferenceSmCount);
}

}  // namespace simtrain
