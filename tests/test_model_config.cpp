// ModelConfig's JSON: written once (to_json), read back by the scenario's own
// model parser to an equal ModelConfig, with every field in it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model_config_changes.hpp"
#include "sim/base/embedded_files.hpp"
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

}  // namespace
}  // namespace simtrain
