#pragma once
// The model of a scenario: its shape, in the terms of a Hugging Face
// config.json, read from and written back to that JSON.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace simtrain {

struct ModelConfig {
  std::string name;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // == num_attention_heads unless GQA/MQA
  int64_t intermediate_size = 0;    // MLP width (per gate for SwiGLU)
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  // table size when positions are learned
  bool gated_mlp = false;               // SwiGLU (Llama) instead of GELU (GPT)
  bool rms_norm = false;                // RMSNorm (Llama) instead of LayerNorm (GPT)
  bool linear_bias = true;              // biases in linear layers (GPT yes, Llama no)
  bool learned_position_embeddings = true;  // GPT: learned table; Llama: rotary (no parameters)
  bool tie_word_embeddings = true;
  // A field added here is written by to_json too (tests/test_model_config.cpp stops compiling until it is).

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  bool operator==(const ModelConfig&) const = default;
};

// Reads a scenario's model object, or a Hugging Face config.json (with its
// GPT-2 aliases n_embd, n_layer, ...). `path` prefixes field names in
// messages ("model.", or "" for a file of its own); `strict` refuses fields
// simtrain does not read (a config.json is read leniently: it carries many).
// Throws InputError naming `file`, field and reason.
ModelConfig parse_model(const nlohmann::json& document, const std::string& file, const std::string& path, bool strict);

// The model as a scenario's model object, every field explicit, in the keys
// parse_model reads (max_position_embeddings only where there is a table
// size): parse_model reads it back to an equal ModelConfig.
nlohmann::json to_json(const ModelConfig& model);

}  // namespace simtrain
