// Sliding-window attention (Mistral, Gemma, GPT-OSS: Hugging Face's
// sliding_window and layer_types): the query-key pairs a causal window
// leaves, a sliding layer's FLOPs and memory, by hand; and GPT-OSS-120B's
// shipped scenario, whose head_dim-64 attention runs at the measured share.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/model/attention_efficiency.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/parameter_count.hpp"
#include "sim/model/workload.hpp"
#include "sim/scenario/scenario.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using fixtures::op_named;

double training_flops(const UnitWork& work) {
  return work.forward.flops() + work.backward_input.flops() + work.backward_weight.flops();
}

TEST(SlidingWindow, CausalPairsByHand) {
  // S = 6, W = 3: queries 0 to 5 attend to 1, 2, 3, 3, 3, 3 keys, 15 pairs:
  // W(W + 1)/2 + (S - W)·W = 6 + 9.
  EXPECT_EQ(causal_attention_pairs(6, 3), 15);
  EXPECT_EQ(causal_attention_pairs(6, 1), 6);     // each query itself
  EXPECT_EQ(causal_attention_pairs(6, 0), 21);    // no window: S(S + 1)/2
  EXPECT_EQ(causal_attention_pairs(6, 6), 21);    // a window as long as the sequence
  EXPECT_EQ(causal_attention_pairs(6, 100), 21);  // ... or longer
}

// The test GPT of fixtures::scenario_json (hidden 512, 8 heads of 64, 512
// tokens, micro-batch 1, 8 micro-batches) with 2 layers, the first sliding over `window` tokens.
Scenario sliding_gpt(int64_t window, bool flash_attention = true) {
  nlohmann::json document = fixtures::scenario_json(1, 1, 1, 2, "1f1b");
  document["model"]["sliding_window"] = window;
  document["model"]["layer_types"] = {"sliding_attention", "full_attention"};
  document["training"]["flash_attention"] = flash_attention;
  return fixtures::scenario_from(document);
}

TEST(SlidingWindow, AttentionFlopsByHand) {
  const Workload w = build_workload(sliding_gpt(128));
  EXPECT_EQ(&w.layer_at(0), &w.sliding_layer);
  EXPECT_EQ(&w.layer_at(1), &w.layer);
  // Full attention as Megatron counts it: 2·b·s²·(q + o widths) =
  // 2 x 512² x (512 + 512) = 536,870,912. A 128-token window over 512 tokens
  // attends 128·129/2 + 384·128 = 57,408 of the causal 512·513/2 = 131,328
  // pairs: 536,870,912 x 57,408 / 131,328 = 234,684,799.25.
  const double full = op_named(w.layer.forward, "attn").flops;
  const double sliding = op_named(w.sliding_layer.forward, "attn").flops;
  EXPECT_EQ(full, 536'870'912.0);
  EXPECT_NEAR(sliding, 234'684'799.25, 0.01);
  // Its backward twice the forward (Megatron's count), the recomputed scores beyond it.
  const Op& gradient = op_named(w.sliding_layer.backward_input, "attn_grad");
  EXPECT_DOUBLE_EQ(gradient.flops, 2 * sliding);
  EXPECT_DOUBLE_EQ(gradient.uncounted_flops, kAttentionBackwardRecomputedShare * 2 * sliding);
  // Nothing else in the layer changes: the window is attention's alone.
  EXPECT_DOUBLE_EQ(w.sliding_layer.forward.flops() - sliding, w.layer.forward.flops() - full);
  EXPECT_EQ(w.sliding_layer.parameters, w.layer.parameters);
  // The step counts each layer once, for every one of its 8 micro-batches.
  EXPECT_DOUBLE_EQ(w.model_flops_per_step, 8 * (training_flops(w.sliding_layer) + training_flops(w.layer) +
                                                training_flops(w.embedding) + training_flops(w.head)));
}

TEST(SlidingWindow, AWindowAsLongAsTheSequenceIsFullAttention) {
  const Workload w = build_workload(sliding_gpt(512));
  EXPECT_EQ(op_named(w.sliding_layer.forward, "attn").flops, op_named(w.layer.forward, "attn").flops);
  EXPECT_EQ(w.sliding_layer.activation_bytes, w.layer.activation_bytes);
}

// A sliding layer stores what a full one does: the fused kernel keeps Q, K,
// V, its output and one statistic a row whatever the window, and unfused
// attention (Megatron's FusedScaleMaskSoftmax) masks the whole s x s scores.
// By hand, fused, no recompute (Korthikanti et al. 2022 without the scores,
// with the 1-byte masks of this GPT's 0.1 dropouts): 34·s·b·h = 34 x 512 x 1 x 512 = 8,912,896
// bytes; unfused, 5·a·s²·b = 5 x 8 x 512² = 10,485,760 more, window or not.
TEST(SlidingWindow, StoresWhatFullAttentionStoresByHand) {
  const Workload fused = build_workload(sliding_gpt(128));
  EXPECT_EQ(fused.sliding_layer.activation_bytes, 8'912'896.0);
  EXPECT_EQ(fused.layer.activation_bytes, 8'912'896.0);
  const Workload unfused = build_workload(sliding_gpt(128, false));
  EXPECT_EQ(unfused.sliding_layer.activation_bytes, 8'912'896.0 + 10'485'760.0);
  EXPECT_EQ(unfused.layer.activation_bytes, unfused.sliding_layer.activation_bytes);
  // Unfused, the window masks scores the GEMMs still compute: the same products.
  EXPECT_EQ(unfused.sliding_layer.forward.flops(), unfused.layer.forward.flops());
}

// scenarios/gpt-oss-120b-64xh100.json: every other layer slides over 128
// tokens, and its head_dim-64 attention runs at the share measured on H200
// (RooflineEfficiency: 0.81 forward, 0.73 backward of head_dim 128's).
TEST(GptOss, ShippedScenarioSlidesEveryOtherLayerWithHeadDim64Attention) {
  const Scenario s = load_scenario("gpt-oss-120b-64xh100");
  const Workload w = build_workload(s);
  for (int layer = 0; layer < 36; ++layer)
    EXPECT_EQ(&w.layer_at(layer), layer % 2 == 0 ? &w.sliding_layer : &w.layer) << layer;
  const Op& forward = op_named(w.layer.forward, "attn");
  const Op& backward = op_named(w.layer.backward_input, "attn_grad");
  EXPECT_EQ(forward.shape, (std::vector<int64_t>{1, 64, 4096, 64}));
  const RooflineEfficiency efficiency;
  const GpuSpec& gpu = s.cluster.gpu;
  EXPECT_DOUBLE_EQ(efficiency.attention(gpu, forward),
                   0.54 * 0.81 * attention_shape_factor(forward.shape, false, gpu.sm_count));
  EXPECT_DOUBLE_EQ(efficiency.attention(gpu, backward),
                   0.44 * 0.73 * attention_shape_factor(backward.shape, true, gpu.sm_count));
  // 128 of 4,096 tokens: 128·129/2 + 3,968·128 = 516,160 of 8,390,656 causal pairs.
  EXPECT_DOUBLE_EQ(op_named(w.sliding_layer.forward, "attn").flops, forward.flops * 516'160.0 / 8'390'656.0);
  EXPECT_EQ(w.total_parameters, count_parameters(s.model).total);
}

}  // namespace
}  // namespace simtrain
