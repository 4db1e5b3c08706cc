// ModelConfig's JSON: written once (to_json), read back by the scenario's own
// model parser to an equal ModelConfig, with every field in it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model_config_changes.hpp"
#include "test_support.hpp"
#include "sim/base/embedded_files.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/scenario/model_config.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {
namespace {

ModelConfig read_back(const ModelConfig& model) {
  return parse_model(to_json(model), "written.json", "model.", /*strict=*/true);
}

TEST(ModelConfigJson, EveryShippedModelReadsBackEqual) {
  ASSERT_FALSE(embedded_scenarios().empty());
  for (const EmbeddedFile& file : embedded_scenarios()) {
    const ModelConfig model = load_scenario(std::string(file.name)).model;
    EXPECT_EQ(read_back(model), model) << file.name << ": " << to_json(model).dump();
  }
}

TEST(ModelConfigJson, WritesTheHuggingFaceKeysTheParserReads) {
  const ModelConfig model = load_scenario("tiny-4gpu").model;
  const nlohmann::json expected = {{"name", "gpt-tiny"},
                                   {"hidden_size", 1024},
                                   {"num_hidden_layers", 8},
                                   {"num_attention_heads", 16},
                                   {"num_key_value_heads", 16},
                                   {"intermediate_size", 4096},
                                   {"vocab_size", 32000},
                                   {"max_position_embeddings", 1024},
                                   {"hidden_act", "gelu"},
                                   {"norm", "layernorm"},
                                   {"linear_bias", true},
                                   {"position_embedding", "learned"},
                                   {"tie_word_embeddings", true}};
  EXPECT_EQ(to_json(model), expected);
}

// A change to any one field changes the JSON and still reads back equal.
TEST(ModelConfigJson, EveryFieldIsWrittenAndReadBack) {
  const ModelConfig base = load_scenario("tiny-4gpu").model;
  for (const auto& [field, change] : fixtures::one_change_per_field(base)) {
    ModelConfig changed = base;
    change(changed);
    ASSERT_NE(changed, base) << field;
    EXPECT_NE(to_json(changed), to_json(base)) << field;
    EXPECT_EQ(read_back(changed), changed) << field;
  }
}

TEST(ModelConfigJson, NoTableSizeIsLeftOut) {
  ModelConfig model = load_scenario("tiny-4gpu").model;
  model.max_position_embeddings = 0;  // rotary positions: no table
  EXPECT_FALSE(to_json(model).contains("max_position_embeddings"));
  EXPECT_EQ(read_back(model), model);
}

// ---- the experts' and latent attention's fields of a config.json ----------

// A Llama-like config.json (4 layers) with `fields` added.
nlohmann::json config_with(const nlohmann::json& fields) {
  nlohmann::json config = {{"model_type", "llama"}, {"hidden_size", 512},     {"num_hidden_layers", 4},
                           {"num_attention_heads", 8}, {"vocab_size", 1000},  {"intermediate_size", 1024},
                           {"hidden_act", "silu"},   {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false}};
  config.update(fields);
  return config;
}

ModelConfig read_config(const nlohmann::json& fields = nlohmann::json::object()) {
  return parse_model(config_with(fields), "config.json", "", /*strict=*/false);
}

// The InputError's message reading `fields`.
std::string error_reading(const nlohmann::json& fields) {
  try {
    read_config(fields);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError reading " << fields.dump();
  return "";
}

TEST(ModelConfigExperts, EachFamilysSpellingGivesTheExperts) {
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    const ModelConfig m = read_config({{key, 8}, {"num_experts_per_tok", 2}});
    EXPECT_EQ(m.num_experts, 8) << key;
    EXPECT_EQ(m.experts_per_token, 2) << key;
    EXPECT_EQ(m.moe_intermediate_size, 1024) << key;  // intermediate_size, as Mixtral's are
    EXPECT_EQ(m.moe_layer_count(), 4) << key;
  }
  EXPECT_EQ(read_config().moe_layer_count(), 0);
}

TEST(ModelConfigExperts, DenseLayersAsDeepSeekAndQwenPlaceThem) {
  const nlohmann::json moe = {{"num_experts", 8}, {"num_experts_per_tok", 2}};
  nlohmann::json deepseek = moe, qwen_list = moe, qwen_step = moe, both = moe;
  deepseek["first_k_dense_replace"] = 3;       // layers 0-2 dense
  qwen_list["mlp_only_layers"] = {1, 3, 3};    // layers 1 and 3 dense
  qwen_step["decoder_sparse_step"] = 2;        // layers 1 and 3 MoE
  both["first_k_dense_replace"] = 2;
  both["decoder_sparse_step"] = 2;
  both["mlp_only_layers"] = {0, 3};            // layer 3 of 2..3 with index + 1 even: none left
  EXPECT_EQ(read_config(deepseek).moe_layer_count(), 1);
  EXPECT_EQ(read_config(qwen_list).moe_layer_count(), 2);
  EXPECT_EQ(read_config(qwen_step).moe_layer_count(), 2);
  EXPECT_EQ(read_config(both).moe_layer_count(), 0);
}

TEST(ModelConfigExperts, HeadDimIsReadWhereItIsNotHiddenOverHeads) {
  EXPECT_EQ(read_config().head_dim, 64);
  EXPECT_EQ(read_config({{"head_dim", 128}}).head_dim, 128);
  // GPT-OSS: 64 heads of 64 on a hidden size of 2880, not of 45.
  EXPECT_EQ(read_config({{"hidden_size", 2880}, {"num_attention_heads", 64}, {"head_dim", 64}}).head_dim, 64);
  // hidden_size need not split into the heads when head_dim is given.
  EXPECT_EQ(read_config({{"hidden_size", 1004}, {"head_dim", 128}}).head_dim, 128);
  EXPECT_EQ(error_reading({{"hidden_size", 1004}}),
            "config.json: num_attention_heads: must divide hidden_size (1004) unless head_dim is given");
}

TEST(ModelConfigExperts, InconsistentFieldsNameTheFileTheFieldAndWhy) {
  const auto moe = [](const nlohmann::json& more) {
    nlohmann::json fields = {{"n_routed_experts", 8}, {"num_experts_per_tok", 2}};
    fields.update(more);
    return fields;
  };
  EXPECT_EQ(error_reading({{"num_local_experts", 8}, {"num_experts_per_tok", 9}}),
            "config.json: num_experts_per_tok: must be at most num_local_experts (8), got 9");
  EXPECT_EQ(error_reading({{"num_experts", 8}}),
            "config.json: num_experts_per_tok: missing: a model with experts (num_experts) routes each token to "
            "this many");
  EXPECT_EQ(error_reading({{"num_experts_per_tok", 2}}),
            "config.json: num_experts_per_tok: given without the number of experts (num_local_experts, "
            "num_experts or n_routed_experts)");
  EXPECT_EQ(error_reading({{"first_k_dense_replace", 1}}),
            "config.json: first_k_dense_replace: given without the number of experts (num_local_experts, "
            "num_experts or n_routed_experts)");
  EXPECT_EQ(error_reading(moe({{"num_experts", 8}})),
            "config.json: n_routed_experts: gives the number of experts again (num_experts does): give one");
  EXPECT_EQ(error_reading(moe({{"n_shared_experts", 1}, {"shared_expert_intermediate_size", 512}})),
            "config.json: shared_expert_intermediate_size: given with n_shared_experts: give DeepSeek's shared "
            "experts or Qwen2-MoE's, not both");
  EXPECT_EQ(error_reading(moe({{"first_k_dense_replace", 5}})),
            "config.json: first_k_dense_replace: must be at most num_hidden_layers (4), got 5");
  EXPECT_EQ(error_reading(moe({{"mlp_only_layers", {0, 4}}})),
            "config.json: mlp_only_layers: expected a list of layer indices from 0 to 3, got [0,4]");
  EXPECT_EQ(error_reading(moe({{"moe_layer_freq", 2}})),
            "config.json: moe_layer_freq: only 1 is read (every layer from first_k_dense_replace on is MoE), got 2");
}

TEST(ModelConfigExperts, LatentAttentionNeedsEveryHeadWidth) {
  const nlohmann::json latent = {{"kv_lora_rank", 128}, {"qk_nope_head_dim", 32}, {"qk_rope_head_dim", 16},
                                 {"v_head_dim", 32}};
  const ModelConfig m = read_config(latent);
  EXPECT_TRUE(m.has_latent_attention());
  EXPECT_EQ(m.q_lora_rank, 0);  // null or absent (DeepSeek-V2-Lite): a plain query projection
  nlohmann::json without_v = latent;
  without_v.erase("v_head_dim");
  EXPECT_EQ(error_reading(without_v),
            "config.json: v_head_dim: missing: multi-head latent attention (kv_lora_rank) needs it");
  EXPECT_EQ(error_reading({{"q_lora_rank", 1536}}),
            "config.json: q_lora_rank: given without kv_lora_rank (multi-head latent attention)");
  nlohmann::json with_bias = latent;
  with_bias["attention_bias"] = true;
  EXPECT_EQ(error_reading(with_bias),
            "config.json: kv_lora_rank: multi-head latent attention is read without biases (DeepSeek's "
            "attention_bias is false), but the model has linear biases");
}

// ---- sliding-window attention and attention sinks ---------------------------

TEST(ModelConfigSlidingWindow, LayerTypesNameTheSlidingLayers) {
  const ModelConfig m = read_config({{"sliding_window", 128},
                                     {"layer_types", {"sliding_attention", "full_attention", "sliding_attention",
                                                      "full_attention"}}});
  EXPECT_EQ(m.sliding_window, 128);
  EXPECT_EQ(m.sliding_layers, (std::vector<bool>{true, false, true, false}));
  EXPECT_TRUE(m.is_sliding_layer(2));
  EXPECT_FALSE(m.is_sliding_layer(3));
  EXPECT_EQ(read_back(m), m);
}

TEST(ModelConfigSlidingWindow, WithoutLayerTypesEveryLayerSlidesUnlessQwenSaysOtherwise) {
  // Mistral 7B v0.1: sliding_window alone, every layer.
  EXPECT_EQ(read_config({{"sliding_window", 64}}).sliding_layers, std::vector<bool>(4, true));
  // Qwen2: use_sliding_window turns it on from max_window_layers on, off where false.
  EXPECT_EQ(read_config({{"sliding_window", 64}, {"use_sliding_window", true}, {"max_window_layers", 3}})
                .sliding_layers,
            (std::vector<bool>{false, false, false, true}));
  const ModelConfig off = read_config({{"sliding_window", 64}, {"use_sliding_window", false}});
  EXPECT_EQ(off.sliding_window, 0);
  EXPECT_TRUE(off.sliding_layers.empty());
  EXPECT_EQ(read_config({{"sliding_window", nullptr}}).sliding_window, 0);  // Mixtral's and Qwen3's null
}

TEST(ModelConfigSlidingWindow, BadLayerTypesNameTheFileTheFieldAndWhy) {
  EXPECT_EQ(error_reading({{"sliding_window", 128},
                           {"layer_types", {"sliding_attention", "linear_attention", "full_attention",
                                            "full_attention"}}}),
            "config.json: layer_types: entry 1 is \"linear_attention\": simtrain reads \"sliding_attention\" and "
            "\"full_attention\" only");
  EXPECT_EQ(error_reading({{"sliding_window", 128}, {"layer_types", {"sliding_attention", "full_attention"}}}),
            "config.json: layer_types: expected a list of 4 entries (num_hidden_layers), each \"sliding_attention\" "
            "or \"full_attention\", got 2 entries");
  EXPECT_EQ(error_reading({{"layer_types", "sliding_attention"}}),
            "config.json: layer_types: expected a list of 4 entries (num_hidden_layers), each \"sliding_attention\" "
            "or \"full_attention\", got \"sliding_attention\"");
  EXPECT_EQ(error_reading({{"layer_types", {"sliding_attention", "full_attention", "full_attention",
                                            "full_attention"}}}),
            "config.json: layer_types: names sliding_attention layers, but the model has no sliding window "
            "(sliding_window is not given)");
  // A scenario's model object names its file and the field's path.
  nlohmann::json document = fixtures::scenario_json(1, 1, 1, 2, "1f1b");
  document["model"]["sliding_window"] = 16;
  document["model"]["layer_types"] = {"full_attention", "global_attention"};
  EXPECT_EQ(fixtures::scenario_error(document),
            "test.json: model.layer_types: entry 1 is \"global_attention\": simtrain reads \"sliding_attention\" "
            "and \"full_attention\" only");
}

// openai/gpt-oss-120b's config.json (Hugging Face, as scenarios/models/gpt-oss-120b.json holds it).
TEST(ModelConfigSlidingWindow, GptOssReadsAsItsConfigSays) {
  const std::string path = std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/models/gpt-oss-120b.json";
  const ModelConfig m = parse_model(read_json_file(path), path, "", /*strict=*/false);
  EXPECT_EQ(m.num_layers, 36);
  EXPECT_EQ(m.hidden_size, 2880);
  EXPECT_EQ(m.num_attention_heads, 64);
  EXPECT_EQ(m.num_key_value_heads, 8);
  EXPECT_EQ(m.head_dim, 64);  // not 2880 / 64 = 45
  EXPECT_EQ(m.num_experts, 128);
  EXPECT_EQ(m.experts_per_token, 4);
  EXPECT_EQ(m.moe_intermediate_size, 2880);
  EXPECT_EQ(m.vocab_size, 201088);
  EXPECT_TRUE(m.gated_mlp && m.rms_norm && m.linear_bias && !m.tie_word_embeddings);
  EXPECT_EQ(m.sliding_window, 128);
  for (int64_t layer = 0; layer < 36; ++layer) EXPECT_EQ(m.is_sliding_layer(layer), layer % 2 == 0) << layer;
  EXPECT_TRUE(m.attention_sinks);  // model_type gpt_oss
  EXPECT_EQ(read_back(m), m);
  EXPECT_FALSE(read_config().attention_sinks);
}

TEST(ModelConfigExperts, ShippedMoeModelsReadBackEqual) {
  for (const char* name : {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b", "gpt-oss-20b"}) {
    const std::string path = std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/models/" + name + ".json";
    const ModelConfig model = parse_model(read_json_file(path), path, "", /*strict=*/false);
    EXPECT_TRUE(model.has_experts()) << name;
    EXPECT_EQ(read_back(model), model) << name << ": " << to_json(model).dump();
  }
}

}  // namespace
}  // namespace simtrain
