#include "sim/scenario/model_config.hpp"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "sim/base/json_fields.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

int64_t even_head_dim(const ModelConfig& m) { return m.hidden_size / m.num_attention_heads; }

// Fields that mean nothing without `what`, read already (so that strict mode
// knows them): the first one given is refused.
void refuse_without(const JsonFields& f, std::initializer_list<std::pair<const char*, bool>> given,
                    const std::string& what) {
  for (const auto& [key, is_given] : given)
    if (is_given) f.fail(key, "given without " + what);
}

// DeepSeek's multi-head latent attention; its absence leaves every field 0.
void parse_latent_attention(JsonFields& f, ModelConfig& m) {
  const std::optional<int64_t> kv_rank = f.integer("kv_lora_rank");
  const std::optional<int64_t> q_rank = f.integer("q_lora_rank");  // null in DeepSeek-V2-Lite: no query latent
  const std::optional<int64_t> nope = f.integer("qk_nope_head_dim");
  const std::optional<int64_t> rope = f.integer("qk_rope_head_dim");
  const std::optional<int64_t> v = f.integer("v_head_dim");
  if (!kv_rank) {
    refuse_without(f,
                   {{"q_lora_rank", bool(q_rank)}, {"qk_nope_head_dim", bool(nope)},
                    {"qk_rope_head_dim", bool(rope)}, {"v_head_dim", bool(v)}},
                   "kv_lora_rank (multi-head latent attention)");
    return;
  }
  auto need = [&](const std::optional<int64_t>& value, const std::string& key) {
    if (!value) f.fail(key, "missing: multi-head latent attention (kv_lora_rank) needs it");
    return *value;
  };
  m.kv_lora_rank = *kv_rank;
  m.q_lora_rank = q_rank.value_or(0);
  m.qk_nope_head_dim = need(nope, "qk_nope_head_dim");
  m.qk_rope_head_dim = need(rope, "qk_rope_head_dim");
  m.v_head_dim = need(v, "v_head_dim");
  if (m.linear_bias)
    f.fail("kv_lora_rank", "multi-head latent attention is read without biases (DeepSeek's attention_bias is false), "
                           "but the model has linear biases");
}

// Layer indices of mlp_only_layers, each in [0, layers).
std::vector<int64_t> parse_layer_list(JsonFields& f, const std::string& key, int64_t layers) {
  const nlohmann::json& list = f.raw(key);
  const std::string expected = "expected a list of layer indices from 0 to " + str(layers - 1) + ", got ";
  if (!list.is_array()) f.fail(key, expected + list.dump());
  std::vector<int64_t> indices;
  for (const nlohmann::json& index : list) {
    if (!index.is_number_integer() || index.get<int64_t>() < 0 || index.get<int64_t>() >= layers)
      f.fail(key, expected + list.dump());
    indices.push_back(index.get<int64_t>());
  }
  return indices;
}

// The experts, as Mixtral (num_local_experts), Qwen (num_experts) and
// DeepSeek (n_routed_experts) spell them.
void parse_experts(JsonFields& f, ModelConfig& m) {
  std::string experts_key;
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"})
    if (const std::optional<int64_t> experts = f.integer(key)) {
      if (!experts_key.empty()) f.fail(key, "gives the number of experts again (" + experts_key + " does): give one");
      experts_key = key;
      m.num_experts = *experts;
    }
  const std::optional<int64_t> top_k = f.integer("num_experts_per_tok");
  const std::optional<int64_t> expert_width = f.integer("moe_intermediate_size");
  const std::optional<int64_t> shared = f.integer("n_shared_experts", 0);
  const std::optional<int64_t> shared_width = f.integer("shared_expert_intermediate_size", 0);
  const std::optional<int64_t> first_dense = f.integer("first_k_dense_replace", 0);
  const std::optional<int64_t> step = f.integer("decoder_sparse_step");
  const std::optional<int64_t> layer_freq = f.integer("moe_layer_freq");
  const bool dense_list = f.has("mlp_only_layers");
  if (!m.has_experts()) {
    refuse_without(f,
                   {{"num_experts_per_tok", bool(top_k)},
                    {"moe_intermediate_size", bool(expert_width)},
                    {"n_shared_experts", bool(shared)},
                    {"shared_expert_intermediate_size", bool(shared_width)},
                    {"first_k_dense_replace", bool(first_dense)},
                    {"decoder_sparse_step", bool(step)},
                    {"moe_layer_freq", bool(layer_freq)},
                    {"mlp_only_layers", dense_list}},
                   "the number of experts (num_local_experts, num_experts or n_routed_experts)");
    return;
  }
  if (!top_k)
    f.fail("num_experts_per_tok", "missing: a model with experts (" + experts_key + ") routes each token to this many");
  if (*top_k > m.num_experts)
    f.fail("num_experts_per_tok",
           "must be at most " + experts_key + " (" + str(m.num_experts) + "), got " + str(*top_k));
  if (shared.value_or(0) && shared_width.value_or(0))
    f.fail("shared_expert_intermediate_size",
           "given with n_shared_experts: give DeepSeek's shared experts or Qwen2-MoE's, not both");
  if (first_dense && *first_dense > m.num_layers)
    f.fail("first_k_dense_replace",
           "must be at most num_hidden_layers (" + str(m.num_layers) + "), got " + str(*first_dense));
  if (layer_freq && *layer_freq != 1)
    f.fail("moe_layer_freq",
           "only 1 is read (every layer from first_k_dense_replace on is MoE), got " + str(*layer_freq));
  m.experts_per_token = *top_k;
  m.moe_intermediate_size = expert_width.value_or(m.intermediate_size);  // Mixtral's experts are intermediate_size wide
  m.shared_experts = shared.value_or(0);
  m.shared_expert_intermediate_size = shared_width.value_or(0);
  m.first_dense_layers = first_dense.value_or(0);
  m.moe_layer_step = step.value_or(1);
  if (dense_list) m.dense_layers = parse_layer_list(f, "mlp_only_layers", m.num_layers);
}

// layer_types: one entry a layer, "sliding_attention" or "full_attention".
std::vector<bool> parse_layer_types(JsonFields& f, int64_t layers) {
  const nlohmann::json& list = f.raw("layer_types");
  const std::string expected = "expected a list of " + str(layers) +
                               " entries (num_hidden_layers), each \"sliding_attention\" or \"full_attention\"";
  if (!list.is_array()) f.fail("layer_types", expected + ", got " + list.dump());
  if (int64_t(list.size()) != layers) f.fail("layer_types", expected + ", got " + str(int64_t(list.size())) + " entries");
  std::vector<bool> sliding;
  for (const nlohmann::json& type : list) {
    if (type != "sliding_attention" && type != "full_attention")
      f.fail("layer_types", "entry " + str(int64_t(sliding.size())) + " is " + type.dump() +
                                ": simtrain reads \"sliding_attention\" and \"full_attention\" only");
    sliding.push_back(type == "sliding_attention");
  }
  return sliding;
}

// Sliding-window attention as Hugging Face configs give it: sliding_window
// (absent or null: none; Qwen's use_sliding_window false turns it off), on
// the layers layer_types names, else (Qwen2's max_window_layers, with
// use_sliding_window) the layers from max_window_layers on, else every layer (Mistral).
void parse_sliding_window(JsonFields& f, ModelConfig& m) {
  const std::optional<int64_t> window = f.integer("sliding_window");
  const std::optional<bool> use = f.boolean("use_sliding_window");
  const std::optional<int64_t> max_window_layers = f.integer("max_window_layers", 0);
  std::vector<bool> sliding;
  if (f.has("layer_types")) sliding = parse_layer_types(f, m.num_layers);
  if (!window || use == false) {
    if (std::find(sliding.begin(), sliding.end(), true) != sliding.end())
      f.fail("layer_types", std::string("names sliding_attention layers, but the model has no sliding window (") +
                                (window ? "use_sliding_window is false)" : "sliding_window is not given)"));
    return;
  }
  m.sliding_window = *window;
  if (sliding.empty())
    for (int64_t layer = 0; layer < m.num_layers; ++layer)
      sliding.push_back(!(use && max_window_layers) || layer >= *max_window_layers);
  m.sliding_layers = sliding;
}

}  // namespace

namespace {
// MoE by the position rules alone (first_k_dense_replace, decoder_sparse_step).
bool moe_by_position(const ModelConfig& m, int64_t layer) {
  return layer >= m.first_dense_layers && (layer + 1) % m.moe_layer_step == 0;
}
}  // namespace

bool ModelConfig::is_moe_layer(int64_t layer) const {
  return has_experts() && moe_by_position(*this, layer) &&
         std::find(dense_layers.begin(), dense_layers.end(), layer) == dense_layers.end();
}

// The layers from first_dense_layers on whose index + 1 is a multiple of the
// step, counted without visiting each, less those dense_layers names.
int64_t ModelConfig::moe_layer_count() const {
  if (!has_experts()) return 0;
  const auto by_position = [&](int64_t layer) { return moe_by_position(*this, layer); };
  std::vector<int64_t> named = dense_layers;
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  return num_layers / moe_layer_step - first_dense_layers / moe_layer_step -
         std::count_if(named.begin(), named.end(), by_position);
}

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
  const std::optional<int64_t> head_dim = f.integer("head_dim");
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
  // Llama-like Hugging Face configs give attention_dropout (0.0) and no residual dropout.
  const auto dropout = [&](const std::string& key, const std::string& gpt2_key) {
    const std::optional<double> value = f.number(key);
    const std::optional<double> gpt2_value = f.number(gpt2_key);
    const double p = value ? *value : gpt2_value.value_or(llama_like ? 0 : 0.1);
    if (p >= 1) f.fail(value ? key : gpt2_key, "must be below 1 (a probability), got " + number_text(p));
    return p;
  };
  m.hidden_dropout = dropout("hidden_dropout", "resid_pdrop");
  m.attention_dropout = dropout("attention_dropout", "attn_pdrop");
  parse_latent_attention(f, m);
  parse_experts(f, m);
  parse_sliding_window(f, m);
  m.attention_sinks = f.boolean("attention_sinks").value_or(model_type == "gpt_oss");
  if (strict) f.reject_unknown({"model_type"});

  if (!head_dim && m.hidden_size % m.num_attention_heads != 0)
    f.fail("num_attention_heads", "must divide hidden_size (" + str(m.hidden_size) + ") unless head_dim is given");
  if (m.num_attention_heads % m.num_key_value_heads != 0)
    f.fail("num_key_value_heads", "must divide num_attention_heads (" + str(m.num_attention_heads) + ")");
  m.head_dim = head_dim.value_or(even_head_dim(m));
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
  // Where they differ from what the parser assumes of this JSON (it names no
  // rms_norm_eps, rope_theta or model_type: Megatron's 0.1).
  if (m.hidden_dropout != 0.1) model["hidden_dropout"] = m.hidden_dropout;
  if (m.attention_dropout != 0.1) model["attention_dropout"] = m.attention_dropout;
  // 0 stands for "not given", which the parser reads as the field left out (it refuses a 0).
  if (m.max_position_embeddings) model["max_position_embeddings"] = m.max_position_embeddings;
  // Written only where the file would have to say it, so that the JSON (and
  // the checkpoint hash made of it) of a model without it stays as it was.
  if (m.hidden_size % m.num_attention_heads != 0 || m.head_dim != even_head_dim(m)) model["head_dim"] = m.head_dim;
  if (m.has_latent_attention()) {
    model["kv_lora_rank"] = m.kv_lora_rank;
    if (m.q_lora_rank) model["q_lora_rank"] = m.q_lora_rank;
    model["qk_nope_head_dim"] = m.qk_nope_head_dim;
    model["qk_rope_head_dim"] = m.qk_rope_head_dim;
    model["v_head_dim"] = m.v_head_dim;
  }
  if (m.sliding_window) {
    model["sliding_window"] = m.sliding_window;
    nlohmann::json& types = model["layer_types"] = nlohmann::json::array();
    for (const bool sliding : m.sliding_layers) types.push_back(sliding ? "sliding_attention" : "full_attention");
  }
  if (m.attention_sinks) model["attention_sinks"] = true;
  if (m.has_experts()) {
    model["num_experts"] = m.num_experts;
    model["num_experts_per_tok"] = m.experts_per_token;
    model["moe_intermediate_size"] = m.moe_intermediate_size;
    if (m.shared_experts) model["n_shared_experts"] = m.shared_experts;
    if (m.shared_expert_intermediate_size) model["shared_expert_intermediate_size"] = m.shared_expert_intermediate_size;
    if (m.first_dense_layers) model["first_k_dense_replace"] = m.first_dense_layers;
    if (!m.dense_layers.empty()) model["mlp_only_layers"] = m.dense_layers;
    if (m.moe_layer_step != 1) model["decoder_sparse_step"] = m.moe_layer_step;
  }
  return model;
}

}  // namespace simtrain
