#include "sim/scenario/model_config.hpp"

#include <optional>

#include "sim/base/json_fields.hpp"

namespace simtrain {

ModelConfig parse_model(const nlohmann::json& document, const std::string& file, const std::string& path,
                        bool strict) {
  JsonFields f(document, file, path);
  ModelConfig m;
  const std::string model_type = f.text("model_type").value_or("");
  m.name = f.text("name").value_or(model_type.empty() ? "model" : model_type);
  // Hugging Face GPT-2 configs use n_embd, n_layer, ... for the same things.
  auto alias_integer = [&](const std::string& key, const std::string& gpt2_key) {
    std::optional<int64_t> value = f.integer(key);
    std::optional<int64_t> gpt2_value = f.integer(gpt2_key);
    return value ? value : gpt2_value;
  };
  auto need = [&](std::optional<int64_t> value, const std::string& key) {
    if (!value) f.fail(key, "missing");
    return *value;
  };
  m.hidden_size = need(alias_integer("hidden_size", "n_embd"), "hidden_size");
  m.num_layers = need(alias_integer("num_hidden_layers", "n_layer"), "num_hidden_layers");
  m.num_attention_heads = need(alias_integer("num_attention_heads", "n_head"), "num_attention_heads");
  m.num_key_value_heads = f.integer("num_key_value_heads").value_or(m.num_attention_heads);
  m.vocab_size = need(f.integer("vocab_size"), "vocab_size");
  m.intermediate_size = alias_integer("intermediate_size", "n_inner").value_or(4 * m.hidden_size);
  m.max_position_embeddings = alias_integer("max_position_embeddings", "n_positions").value_or(0);

  const std::string act = f.text("hidden_act").value_or(f.text("activation_function").value_or("gelu"));
  m.gated_mlp = act == "silu" || act == "swiglu" || act == "swish";
  const bool llama_like = f.has("rms_norm_eps") || f.has("rope_theta") || model_type == "llama" ||
                          model_type == "mistral" || model_type == "qwen2";
  m.rms_norm = f.choice("norm", {"layernorm", "rmsnorm"}).value_or(llama_like ? "rmsnorm" : "layernorm") == "rmsnorm";
  m.linear_bias = f.boolean("linear_bias").value_or(f.boolean("attention_bias").value_or(!llama_like));
  m.learned_position_embeddings =
      f.choice("position_embedding", {"learned", "rotary"}).value_or(llama_like ? "rotary" : "learned") == "learned";
  m.tie_word_embeddings = f.boolean("tie_word_embeddings").value_or(!llama_like);
  if (strict) f.reject_unknown({"model_type"});

  if (m.hidden_size % m.num_attention_heads != 0)
    f.fail("num_attention_heads", "must divide hidden_size (" + std::to_string(m.hidden_size) + ")");
  if (m.num_attention_heads % m.num_key_value_heads != 0)
    f.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(m.num_attention_heads) + ")");
  return m;
}

nlohmann::json to_json(const ModelConfig& m) {
  nlohmann::json model = {{"name", m.name},
                          {"hidden_size", m.hidden_size},
                          {"num_hidden_layers", m.num_layers},
                          {"num_attention_heads", m.num_attention_heads},
                          {"num_key_value_heads", m.num_key_value_heads},
                          {"intermediate_size", m.intermediate_size},
                          {"vocab_size", m.vocab_size},
                          {"hidden_act", m.gated_mlp ? "silu" : "gelu"},
                          {"norm", m.rms_norm ? "rmsnorm" : "layernorm"},
                          {"linear_bias", m.linear_bias},
                          {"position_embedding", m.learned_position_embeddings ? "learned" : "rotary"},
                          {"tie_word_embeddings", m.tie_word_embeddings}};
  // 0 stands for "not given", which the parser reads as the field left out (it refuses a 0).
  if (m.max_position_embeddings) model["max_position_embeddings"] = m.max_position_embeddings;
  return model;
}

}  // namespace simtrain
