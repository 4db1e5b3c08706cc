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
  [[maybe_unused]] const auto& [name, hidden_size, num_layers, num_attention_heads, num_key_value_heads,
                                intermediate_size, vocab_size, max_position_embeddings, gated_mlp, rms_norm,
                                linear_bias, learned_position_embeddings, tie_word_embeddings] = model;
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
  };
}

}  // namespace simtrain::fixtures
