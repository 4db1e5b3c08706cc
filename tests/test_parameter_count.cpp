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

// OpenAI's gpt-oss model card (arXiv 2508.10925, Table 1): gpt-oss-120b has
// 116.83B parameters, 5.13B active per token; gpt-oss-20b 20.91B and 3.61B.
// Its active figure counts the output layer and not the input embedding
// (MLP 114.71B + attention 0.96B + embedding and unembedding 1.16B = 116.83B;
// 4 of 128 experts, the attention and the unembedding: 5.13B). The count:
// per layer, q/k/v/o projections with their biases and 64 sinks (26,550,144:
// 2880 x (4096 + 2 x 512) + 4096 x 2880 + 8,000 + 64), two RMSNorms, the
// router with its bias (2880 x 128 + 128) and experts of gate_up_proj,
// down_proj and their biases (2880 x 5760 + 2880 x 2880 + 5760 + 2880 =
// 24,891,840 each); the 201,088 x 2880 token table and output layer and the final norm.
TEST(ParameterCount, GptOss120bIs116Point83BTotal5Point13BActive) {
  const ModelConfig m = shipped_model("gpt-oss-120b");
  const ParameterCount count = count_parameters(m);
  EXPECT_EQ(count.total, 116'829'156'672.0);
  EXPECT_EQ(count.active - count.embedding, 5'132'849'472.0);
  expect_published(count.total, 116.83, 0.01, "total");
  expect_published(count.active - count.embedding, 5.13, 0.01, "active, as the model card counts");
  EXPECT_EQ(moe_layer_parameters(m, 1, 0).attention_weights + 8'000 + 64, 26'550'144.0);
  EXPECT_EQ(moe_layer_parameters(m, 1, 1).experts(), 24'891'840.0);
}

TEST(ParameterCount, GptOss20bIs20Point91BTotal3Point61BActive) {
  const ParameterCount count = count_parameters(shipped_model("gpt-oss-20b"));
  expect_published(count.total, 20.91, 0.01, "total");
  expect_published(count.active - count.embedding, 3.61, 0.01, "active, as the model card counts");
}

// One TP rank's share of a layer: the heads' sinks split with the heads, the router and norms whole.
TEST(ParameterCount, TensorParallelRanksSplitTheSinksWithTheHeads) {
  const ModelConfig m = shipped_model("gpt-oss-120b");
  const LayerParameters one = moe_layer_parameters(m, 1, 16), eight = moe_layer_parameters(m, 8, 16);
  const double replicated = 2 * 2880.0 + 2880 /* o_proj bias */ + 2880 * 128 + 128 /* router */ + 16 * 2880.0;
  EXPECT_EQ(eight.vectors + eight.router + eight.expert_biases - replicated,
            (one.vectors + one.router + one.expert_biases - replicated) / 8);
  EXPECT_EQ(eight.linear_weights(), one.linear_weights() / 8);
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
