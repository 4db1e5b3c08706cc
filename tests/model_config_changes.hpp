#pragma once
// One change to each field of ModelConfig, each leaving a valid model, for
// the tests that every field reaches the JSON (test_model_config.cpp) and the
// checkpoint's hash (test_checkpoint.cpp).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/model_config.hpp"

namespace simtrain::fixtures {

using ModelChange = std::pair<std::string, std::function<void(ModelConfig&)>>;

inline std::vector<ModelChange> one_change_per_field(const ModelConfig& model) {
  // Names every field, so it stops compiling when one is added: add the
  // field to to_json(ModelConfig), then a change of it below.
  [[maybe_unused]] const auto& [name, hidden_size, num_layers, num_attention_heads, num_key_value_heads, head_dim,
                                intermediate_size, vocab_size, max_position_embeddings, gated_mlp, rms_norm,
                                linear_bias, learned_position_embeddings, tie_word_embeddings, hidden_dropout,
                                attention_dropout, q_lora_rank,
                                kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, num_experts,
                                experts_per_token, moe_intermediate_size, shared_experts,
                                shared_expert_intermediate_size, first_dense_layers, dense_layers,
                                moe_layer_step, sliding_window, sliding_layers, attention_sinks] = model;
  // The fields that only mean something together, set as a valid whole.
  const auto latent = [](ModelConfig& m) {
    m.kv_lora_rank = 128;
    m.qk_nope_head_dim = 32;
    m.qk_rope_head_dim = 16;
    m.v_head_dim = 32;
    m.linear_bias = false;  // latent attention is read without biases
  };
  const auto experts = [](ModelConfig& m) {
    m.num_experts = 8;
    m.experts_per_token = 2;
    m.moe_intermediate_size = m.intermediate_size;
  };
  return {
      {"name", [](ModelConfig& m) { m.name += " renamed"; }},
      {"hidden_size", [](ModelConfig& m) { m.hidden_size *= 2; }},
      {"num_layers", [](ModelConfig& m) { m.num_layers += 1; }},
      {"num_attention_heads", [](ModelConfig& m) { m.num_attention_heads *= 2; }},
      {"num_key_value_heads", [](ModelConfig& m) { m.num_key_value_heads = 1; }},
      {"intermediate_size", [](ModelConfig& m) { m.intermediate_size += 64; }},
      {"vocab_size", [](ModelConfig& m) { m.vocab_size += 1; }},
      {"max_position_embeddings", [](ModelConfig& m) { m.max_position_embeddings += 1; }},
      {"gated_mlp", [](ModelConfig& m) { m.gated_mlp = !m.gated_mlp; }},
      {"rms_norm", [](ModelConfig& m) { m.rms_norm = !m.rms_norm; }},
      {"linear_bias", [](ModelConfig& m) { m.linear_bias = !m.linear_bias; }},
      {"learned_position_embeddings",
       [](ModelConfig& m) { m.learned_position_embeddings = !m.learned_position_embeddings; }},
      {"tie_word_embeddings", [](ModelConfig& m) { m.tie_word_embeddings = !m.tie_word_embeddings; }},
      {"hidden_dropout", [](ModelConfig& m) { m.hidden_dropout = m.hidden_dropout > 0 ? 0 : 0.1; }},
      {"attention_dropout", [](ModelConfig& m) { m.attention_dropout = m.attention_dropout > 0 ? 0 : 0.1; }},
      {"head_dim", [](ModelConfig& m) { m.head_dim *= 2; }},
      {"q_lora_rank", [=](ModelConfig& m) { latent(m); m.q_lora_rank = 256; }},
      {"kv_lora_rank", latent},
      {"qk_nope_head_dim", [=](ModelConfig& m) { latent(m); m.qk_nope_head_dim = 64; }},
      {"qk_rope_head_dim", [=](ModelConfig& m) { latent(m); m.qk_rope_head_dim = 32; }},
      {"v_head_dim", [=](ModelConfig& m) { latent(m); m.v_head_dim = 64; }},
      {"num_experts", experts},
      {"experts_per_token", [=](ModelConfig& m) { experts(m); m.experts_per_token = 1; }},
      {"moe_intermediate_size", [=](ModelConfig& m) { experts(m); m.moe_intermediate_size = 512; }},
      {"shared_experts", [=](ModelConfig& m) { experts(m); m.shared_experts = 1; }},
      {"shared_expert_intermediate_size",
       [=](ModelConfig& m) { experts(m); m.shared_expert_intermediate_size = 1024; }},
      {"first_dense_layers", [=](ModelConfig& m) { experts(m); m.first_dense_layers = 1; }},
      {"dense_layers", [=](ModelConfig& m) { experts(m); m.dense_layers = {0, 3}; }},
      {"moe_layer_step", [=](ModelConfig& m) { experts(m); m.moe_layer_step = 2; }},
      {"sliding_window",
       [](ModelConfig& m) {
         m.sliding_window = 64;
         m.sliding_layers.assign(m.num_layers, true);
       }},
      {"sliding_layers",
       [](ModelConfig& m) {
         m.sliding_window = 64;
         m.sliding_layers.assign(m.num_layers, false);
         m.sliding_layers[0] = true;
       }},
      {"attention_sinks", [](ModelConfig& m) { m.attention_sinks = !m.attention_sinks; }},
  };
}

}  // namespace simtrain::fixtures
