#include "sim/model/parameter_count.hpp"

namespace simtrain {

namespace {

double norm(const ModelConfig& m, int64_t width) { return (m.rms_norm ? 1.0 : 2.0) * double(width); }

// One layer's attention projections (Hugging Face's modeling files name them).
double attention_parameters(const ModelConfig& m) {
  const double h = double(m.hidden_size), heads = double(m.num_attention_heads);
  if (m.has_latent_attention()) {
    const double qk_head = double(m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double q_rank = double(m.q_lora_rank), kv_rank = double(m.kv_lora_rank);
    // q_a_proj, q_a_layernorm, q_b_proj; or one q_proj without a query latent.
    const double query =
        m.q_lora_rank ? h * q_rank + norm(m, m.q_lora_rank) + q_rank * heads * qk_head : h * heads * qk_head;
    // kv_a_proj_with_mqa (the latent and the rotary key all heads share), kv_a_layernorm, kv_b_proj.
    const double key_value = h * (kv_rank + double(m.qk_rope_head_dim)) + norm(m, m.kv_lora_rank) +
                             kv_rank * heads * double(m.qk_nope_head_dim + m.v_head_dim);
    return query + key_value + heads * double(m.v_head_dim) * h;  // o_proj
  }
  const double q = heads * double(m.head_dim), kv = double(m.num_key_value_heads * m.head_dim);
  const double biases = m.linear_bias ? q + 2 * kv + h : 0;
  return h * (q + 2 * kv) + q * h + biases;
}

// A dense MLP `width` wide (per gate): up (and gate), then down.
double mlp_parameters(const ModelConfig& m, int64_t width) {
  const double h = double(m.hidden_size), up = (m.gated_mlp ? 2.0 : 1.0) * double(width);
  const double biases = m.linear_bias ? up + h : 0;
  return h * up + double(width) * h + biases;
}

}  // namespace

ParameterCount count_parameters(const ModelConfig& m) {
  const double h = double(m.hidden_size), vocab_rows = double(m.vocab_size) * h;
  ParameterCount count;
  count.embedding = vocab_rows + (m.learned_position_embeddings ? double(m.max_position_embeddings) * h : 0);
  const double head = norm(m, m.hidden_size) + (m.tie_word_embeddings ? 0 : vocab_rows);  // final norm, lm_head
  const double attention = attention_parameters(m) + 2 * norm(m, m.hidden_size);  // with the layer's two norms
  const double moe_layers = double(m.moe_layer_count()), dense_layers = double(m.num_layers) - moe_layers;
  const double dense = dense_layers * (attention + mlp_parameters(m, m.intermediate_size));
  count.total = count.active = count.embedding + dense + head;
  if (!m.has_experts()) return count;

  const double expert = mlp_parameters(m, m.moe_intermediate_size);
  // DeepSeek's shared experts are experts like the routed ones; Qwen2-MoE's
  // one is wider, and a sigmoid gate (hidden_size -> 1) scales its output.
  const double gated_shared =
      m.shared_expert_intermediate_size ? mlp_parameters(m, m.shared_expert_intermediate_size) + h : 0;
  const double shared = double(m.shared_experts) * expert + gated_shared;
  const double every_token = attention + h * double(m.num_experts) + shared;  // with the router
  count.total += moe_layers * (every_token + double(m.num_experts) * expert);
  count.active += moe_layers * (every_token + double(m.experts_per_token) * expert);
  return count;
}

}  // namespace simtrain
