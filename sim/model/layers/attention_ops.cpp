#include "sim/model/layers/attention_ops.hpp"

namespace simtrain {

double causal_attention_pairs(int64_t sequence, int64_t window) {
  const double s = double(sequence), w = double(window);
  if (window <= 0 || window >= sequence) return s * (s + 1) / 2;
  return w * (w + 1) / 2 + (s - w) * w;
}

}  // namespace simtrain

namespace simtrain::layers {

namespace {

// Of the products Megatron counts for a causal attention over the whole
// sequence (all CP ranks' tokens), the share a sliding window leaves: its
// pairs over the causal ones (1 without a window, or one as long as the sequence).
double window_share(const Shard& x) {
  const int64_t sequence = x.seq * x.cp;
  return causal_attention_pairs(sequence, x.window) / causal_attention_pairs(sequence, 0);
}

}  // namespace

std::vector<Step> attention_projections(const Shard& x) {
  return {layer_linear(x, "qkv", x.tokens(), x.q_width() + 2 * x.kv_width(), x.hidden, true)};
}

std::vector<Step> attention_core(const Shard& x, bool flash_attention) {
  const double e = x.element_bytes;
  if (flash_attention) {
    // Megatron counts the full (non-causal) s×s products: 4·b·s²·h/t, or
    // 2·b·s²·heads·(qk + v head dims)/t where values are narrower (latent
    // attention). A sliding window keeps its share of them: the fused kernel
    // (FlashAttention's and cuDNN's window_size) skips the key blocks outside
    // the window. Its memory is the same: Q, K, V, O and a row statistic.
    const double flops = 2.0 * x.batch * x.seq * x.seq * (x.q_width() + x.o_width()) * window_share(x);
    const double bytes = x.qkv_bytes() + x.attention_output_bytes();  // read q, k, v; write o
    // With context parallelism, one block per K/V chunk of the ring. Under
    // causal load balancing every block is the work of a causal attention
    // over the chunk's tokens: the diagonal block is one, the others are
    // full blocks of half its size (both chunks of Q against the earlier
    // chunk of K/V, or the later chunk of Q against both), so each rank runs
    // 1/CP of the whole causal attention. all_gather runs the same products
    // against the gathered K/V. The all-to-alls (a2a, a2a+p2p's inner group)
    // leave a rank cp_a2a times the tokens with 1/cp_a2a of the heads: each
    // block cp_a2a times the products, the same bytes. So p2p runs CP blocks
    // of seq/CP tokens, a2a one over the whole sequence, a2a+p2p B of seq/B.
    const Op block{"attn", OpClass::attention, {x.batch, x.heads / x.cp_a2a, x.seq * x.cp_a2a, x.head_dim},
                   flops * double(x.cp_a2a), bytes};
    return std::vector<Step>(x.cp_ring, block);
  }
  // Unfused, a sliding window is a mask on the whole score matrix (Megatron's
  // FusedScaleMaskSoftmax): the same products, scores and memory as without.
  const int64_t heads_batch = x.batch * x.heads;
  const int64_t scores = heads_batch * x.seq * x.seq;
  return {
      MatMul{"attn_scores", x.seq, x.seq, x.head_dim, heads_batch, false},
      memory_op("softmax", scores, 2 * e),  // scale, mask and softmax fused
      memory_op("attn_dropout", scores, 2 * e + kMaskBytes),
      MatMul{"attn_context", x.seq, x.v_head_dim, x.seq, heads_batch, false},
  };
}

}  // namespace simtrain::layers
