#pragma once
// The model of a scenario: its shape, in the terms of a Hugging Face
// config.json, read from and written back to that JSON.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

struct ModelConfig {
  std::string name;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // == num_attention_heads unless GQA/MQA
  int64_t head_dim = 0;             // per head; hidden_size / num_attention_heads unless the file says (Qwen3, GPT-OSS)
  int64_t intermediate_size = 0;    // MLP width (per gate for SwiGLU)
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  // table size when positions are learned
  bool gated_mlp = false;               // SwiGLU (Llama) instead of GELU (GPT)
  bool rms_norm = false;                // RMSNorm (Llama) instead of LayerNorm (GPT)
  bool linear_bias = true;              // biases in linear layers (GPT yes, Llama no)
  bool learned_position_embeddings = true;  // GPT: learned table; Llama: rotary (no parameters)
  bool tie_word_embeddings = true;
  // Dropout probabilities (Megatron's --hidden-dropout, --attention-dropout;
  // Hugging Face GPT-2's resid_pdrop, attn_pdrop): with 0, PyTorch's dropout
  // returns its input and stores no mask. Megatron defaults both to 0.1; Llama-like
  // models train without (their Hugging Face layers have no residual dropout).
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;

  // Multi-head latent attention (DeepSeek-V2/V3): keys and values through a
  // kv_lora_rank-wide latent, queries through a q_lora_rank-wide one (0: a
  // plain query projection). kv_lora_rank 0: the usual q/k/v projections.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;  // per head: the query/key part without rotary positions
  int64_t qk_rope_head_dim = 0;  // ... and the rotary part (its key shared by all heads)
  int64_t v_head_dim = 0;

  // Mixture of experts (num_experts 0: every layer a dense MLP of intermediate_size).
  int64_t num_experts = 0;                      // routed experts of an MoE layer
  int64_t experts_per_token = 0;                // top-k
  int64_t moe_intermediate_size = 0;            // one routed expert's width (Mixtral: intermediate_size)
  int64_t shared_experts = 0;                   // DeepSeek: experts every token uses, moe_intermediate_size wide
  int64_t shared_expert_intermediate_size = 0;  // Qwen2-MoE: one gated shared expert this wide
  // Which layers are MoE: all but the first first_dense_layers, those in
  // dense_layers, and those whose (index + 1) is no multiple of moe_layer_step.
  int64_t first_dense_layers = 0;     // DeepSeek's first_k_dense_replace
  std::vector<int64_t> dense_layers;  // Qwen's mlp_only_layers (0-based)
  int64_t moe_layer_step = 1;         // Qwen's decoder_sparse_step
  // Sliding-window attention (Hugging Face's sliding_window and layer_types:
  // Mistral, Gemma, GPT-OSS): on a sliding layer each query attends to itself
  // and the sliding_window - 1 tokens before it. 0: every layer attends to all before it.
  int64_t sliding_window = 0;
  // Which layers slide (layer_types' "sliding_attention"; every layer where
  // the config names none): num_layers entries where sliding_window > 0, else none.
  std::vector<bool> sliding_layers;
  // GPT-OSS's attention sinks: a learned logit per head that joins every
  // softmax's denominator (model_type gpt_oss, or attention_sinks).
  bool attention_sinks = false;
  // A field added here is written by to_json too (tests/test_model_config.cpp stops compiling until it is).

  bool has_experts() const { return num_experts > 0; }
  bool is_moe_layer(int64_t layer) const;  // 0-based index
  int64_t moe_layer_count() const;
  // Some layers dense, the others MoE (DeepSeek's first three, Qwen's mlp_only_layers).
  bool mixes_dense_and_moe_layers() const { return has_experts() && moe_layer_count() != num_layers; }
  bool has_latent_attention() const { return kv_lora_rank > 0; }
  bool is_sliding_layer(int64_t layer) const { return !sliding_layers.empty() && sliding_layers[layer]; }
  bool operator==(const ModelConfig&) const = default;
};

// Reads a scenario's model object, or a Hugging Face config.json (with its
// GPT-2 aliases n_embd, n_layer, ..., the experts' spellings of Mixtral,
// Qwen and DeepSeek, and the sliding window as Mistral, Qwen and GPT-OSS
// give it). `path` prefixes field names in messages ("model.", or "" for a
// file of its own); `strict` refuses fields simtrain does not read
// (a config.json is read leniently: it carries many). Throws InputError
// naming `file`, field and reason.
ModelConfig parse_model(const nlohmann::json& document, const std::string& file, const std::string& path, bool strict);

// The model as a scenario's model object, every field explicit, in the keys
// parse_model reads (max_position_embeddings only where there is a table
// size, head_dim only where it is not hidden_size / num_attention_heads, the
// attention latents and experts only where the model has them): parse_model
// reads it back to an equal ModelConfig.
nlohmann::json to_json(const ModelConfig& model);

}  // namespace simtrain
