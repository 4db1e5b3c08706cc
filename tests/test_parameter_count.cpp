// Parameter counts from a model's config alone: the totals the model cards
// publish, for the config.json files of scenarios/models/, and the
// workload's own count for every dense scenario.
#include <gtest/gtest.h>

#include <string>

#include "sim/base/embedded_files.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/model/parameter_count.hpp"
#include "sim/model/workload.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {
namespace {

ModelConfig shipped_model(const std::string& name) {
  const std::string path = std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/models/" + name + ".json";
  return parse_model(read_json_file(path), path, "", /*strict=*/false);
}

// `count` rounds to `published` billions at the published precision: 46.7
// (a step of 0.1) means [46.65, 46.75).
void expect_published(double count, double published, double step, const std::string& what) {
  EXPECT_GE(count / 1e9, published - step / 2) << what << ": " << count;
  EXPECT_LT(count / 1e9, published + step / 2) << what << ": " << count;
}

TEST(ParameterCount, Mixtral8x7bIs46Point7BTotal12Point9BActive) {
  const ModelConfig m = shipped_model("mixtral-8x7b");
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.moe_intermediate_size, m.intermediate_size);  // Mixtral's experts are as wide as its MLP would be
  EXPECT_EQ(m.moe_layer_count(), 32);
  const ParameterCount count = count_parameters(m);
  // Exactly the checkpoint: model.safetensors.index.json's total_size,
  // 93,405,585,408 bytes of bf16.
  EXPECT_EQ(count.total, 93'405'585'408.0 / 2);
  // Mistral's announcement: 46.7B total, 12.9B used per token (embedding included).
  expect_published(count.total, 46.7, 0.1, "total");
  expect_published(count.active, 12.9, 0.1, "active");
}

TEST(ParameterCount, Qwen3_30bA3bIs30Point5BTotal) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  EXPECT_EQ(m.head_dim, 128);  // not hidden_size / num_attention_heads = 64
  EXPECT_EQ(m.moe_layer_count(), 48);
  const ParameterCount count = count_parameters(m);
  // The model card: "30.5B in total and 3.3B activated", "(Non-Embedding):
  // 29.9B" (without the token table and the untied output layer). The count
  // leaves out the q/k norms (2 x head_dim per layer, 12,288 in all), which
  // no rounding here can see.
  expect_published(count.total, 30.5, 0.1, "total");
  expect_published(count.total - count.embedding - double(m.vocab_size) * double(m.hidden_size), 29.9, 0.1,
                   "non-embedding");
  // 3.353B with the embedding and the output layer (as Mistral counts):
  // the card's 3.3B, as its other figures, reads truncated to one decimal
  // (30.53 -> 30.5, 29.91 -> 29.9), not rounded.
  EXPECT_GE(count.active / 1e9, 3.3);
  EXPECT_LT(count.active / 1e9, 3.4);
}

TEST(ParameterCount, DeepSeekV3Is671BTotal37BActive) {
  const ModelConfig m = shipped_model("deepseek-v3");
  EXPECT_EQ(m.num_experts, 256);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.first_dense_layers, 3);
  EXPECT_EQ(m.moe_layer_count(), 58);
  EXPECT_EQ(m.kv_lora_rank, 512);
  EXPECT_EQ(m.q_lora_rank, 1536);
  const ParameterCount count = count_parameters(m);
  // DeepSeek's README_WEIGHTS.md: the main model (embedding, 61 layers,
  // output layer) has 671B parameters, 36.6B of them activated "including
  // 0.9B for the output Head" and not the input embedding; the paper rounds
  // that to 37B. The multi-token-prediction module (num_nextn_predict_layers;
  // 11.5B parameters of its own besides the embedding and output head it
  // shares) is not in the 671B and is not counted. Neither is
  // the router's per-expert score-correction bias of noaux_tc routing
  // (256 per MoE layer, 14,848 in all).
  expect_published(count.total, 671, 1, "total");
  expect_published(count.active - count.embedding, 36.6, 0.1, "active, as README_WEIGHTS counts");
  expect_published(count.active - count.embedding, 37, 1, "active, as the paper counts");
}

// For every shipped dense scenario the count is the workload's, weight for weight.
TEST(ParameterCount, DenseModelsCountAsTheWorkloadDoes) {
  ASSERT_FALSE(embedded_scenarios().empty());
  for (const EmbeddedFile& file : embedded_scenarios()) {
    const Scenario s = load_scenario(std::string(file.name));
    if (s.model.has_experts()) continue;  // tests/test_moe.cpp
    const ParameterCount count = count_parameters(s.model);
    EXPECT_EQ(count.total, build_workload(s).total_parameters) << file.name;
    EXPECT_EQ(count.active, count.total) << file.name;
  }
}

}  // namespace
}  // namespace simtrain
