#include "sim/model/parameter_count.hpp"

namespace simtrain {

namespace {

double norm(const ModelConfig& m, int64_t width) { return (m.rms_norm ? 1.0 : 2.0) * double(width); }

double vocab_rows(const ModelConfig& m, int64_t tp) { return double((m.vocab_size + tp - 1) / tp); }

// A layer's attention on one TP rank (Hugging Face's modeling files name the
// parts): its linears' weights in `layer`, returning its norms and biases.
double add_attention(const ModelConfig& m, int64_t tp, LayerParameters& layer) {
  const double h = double(m.hidden_size), heads = double(m.num_attention_heads / tp);
  if (m.has_latent_attention()) {
    const double qk_head = double(m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double q_rank = double(m.q_lora_rank), kv_rank = double(m.kv_lora_rank);
    // q_a_proj (whole on every rank), q_b_proj; or one q_proj without a query latent.
    const double query = m.q_lora_rank ? h * q_rank + q_rank * heads * qk_head : h * heads * qk_head;
    // kv_a_proj_with_mqa (whole: the latent and the rotary key all heads share), kv_b_proj.
    const double key_value =
        h * (kv_rank + double(m.qk_rope_head_dim)) + kv_rank * heads * double(m.qk_nope_head_dim + m.v_head_dim);
    layer.attention_weights = query + key_value + heads * double(m.v_head_dim) * h;  // o_proj
    return norm(m, m.q_lora_rank) + norm(m, m.kv_lora_rank);  // q_a_layernorm, kv_a_layernorm (read without biases)
  }
  const double q = heads * double(m.head_dim), kv = double(m.num_key_value_heads / tp * m.head_dim);
  layer.attention_weights = h * (q + 2 * kv) + q * h;
  return m.linear_bias ? q + 2 * kv + h : 0;  // o_proj's bias whole on every rank
}

// An MLP `width` wide (per gate) on one TP rank: up (and gate), then down,
// into `weights`, returning its biases (down's whole on every rank).
double add_mlp(const ModelConfig& m, int64_t width, double& weights) {
  const double h = double(m.hidden_size), up = (m.gated_mlp ? 2.0 : 1.0) * double(width);
  weights += h * up + double(width) * h;
  return m.linear_bias ? up + h : 0;
}

// The attention and the layer's two norms; GPT-OSS's attention sinks, one
// logit a head (Hugging Face's GptOssAttention.sinks), split over TP with the heads.
LayerParameters attention_layer(const ModelConfig& m, int64_t tp) {
  LayerParameters layer;
  const double sinks = m.attention_sinks ? double(m.num_attention_heads / tp) : 0;
  layer.vectors = add_attention(m, tp, layer) + 2 * norm(m, m.hidden_size) + sinks;
  return layer;
}

}  // namespace

LayerParameters dense_layer_parameters(const ModelConfig& m, int64_t tp) {
  LayerParameters layer = attention_layer(m, tp);
  layer.vectors += add_mlp(m, m.intermediate_size / tp, layer.mlp_weights);
  return layer;
}

LayerParameters moe_layer_parameters(const ModelConfig& m, int64_t tp, int64_t experts) {
  const double h = double(m.hidden_size);
  LayerParameters layer = attention_layer(m, tp);
  for (int64_t expert = 0; expert < experts; ++expert)
    layer.expert_biases += add_mlp(m, m.moe_intermediate_size / tp, layer.expert_weights);
  // DeepSeek's shared experts are one MLP of their joint width (Hugging Face's
  // DeepseekV3MLP of moe_intermediate_size x n_shared_experts, Megatron-Core's
  // SharedExpertMLP); Qwen2-MoE's one is wider, and a sigmoid gate
  // (hidden_size -> 1) scales its output.
  const int64_t shared_width = m.shared_experts * m.moe_intermediate_size + m.shared_expert_intermediate_size;
  if (shared_width) layer.vectors += add_mlp(m, shared_width / tp, layer.mlp_weights);
  // A router of a model with linear biases has one too (Megatron-Core's
  // TopKRouter with add_bias_linear; GPT-OSS's GptOssTopKRouter.bias).
  const double router_bias = m.linear_bias ? double(m.num_experts) : 0;
  layer.router = h * double(m.num_experts) + router_bias + (m.shared_expert_intermediate_size ? h : 0);
  return layer;
}

double embedding_parameters(const ModelConfig& m, int64_t tp) {
  const double positions = m.learned_position_embeddings ? double(m.max_position_embeddings) * m.hidden_size : 0;
  return vocab_rows(m, tp) * double(m.hidden_size) + positions;
}

double head_parameters(const ModelConfig& m, int64_t tp) {
  return norm(m, m.hidden_size) + (m.tie_word_embeddings ? 0 : vocab_rows(m, tp) * double(m.hidden_size));
}

ParameterCount count_parameters(const ModelConfig& m) {
  ParameterCount count;
  count.embedding = embedding_parameters(m, 1);
  const double moe_layers = double(m.moe_layer_count()), dense_layers = double(m.num_layers) - moe_layers;
  const double dense = dense_layers * dense_layer_parameters(m, 1).total();
  count.total = count.active = count.embedding + dense + head_parameters(m, 1);
  if (!m.has_experts()) return count;
  count.total += moe_layers * moe_layer_parameters(m, 1, m.num_experts).total();
  count.active += moe_layers * moe_layer_parameters(m, 1, m.experts_per_token).total();
  return count;
}

}  // namespace simtrain
