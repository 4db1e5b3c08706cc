// The scenario's "software" section (sim/scenario/host_settings.hpp): what
// it holds, where a shipped scenario says what its recipe ran, and the
// errors for what it cannot hold.
#include <gtest/gtest.h>

#include "sim/base/input_error.hpp"
#include "sim/scenario/megatron_arguments.hpp"
#include "sim/scenario/scenario.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

std::string error_of(const nlohmann::json& software) {
  nlohmann::json doc = fixtures::scenario_json(1, 1, 8, 4, "1f1b");
  doc["software"] = software;
  try {
    fixtures::scenario_from(doc);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(HostSettings, AbsentMeansMegatronCoreDefaults) {
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(1, 1, 8, 4, "1f1b"));
  EXPECT_EQ(s.software, HostSettings{});
  EXPECT_FALSE(s.software.moe_permute_fusion);
  EXPECT_TRUE(s.software.moe_grouped_gemm);
  EXPECT_EQ(s.software.cuda_graph_impl, "none");
}

// NeMo 25.11's Qwen3-MoE recipe (Megatron-Bridge 97ad8cc6f: qwen_provider.py:389-396,
// qwen3_llm_pretrain.py:60-74, qwen3_moe.py:287, gpt_provider.py:180; its H100 fp8
// preset sets no CUDA graphs, qwen3_workload_base_configs.py:233-239).
TEST(HostSettings, TheQwen3ScenarioRunsNemosRecipe) {
  const HostSettings s = load_scenario("qwen3-30b-a3b-16xh100").software;
  EXPECT_TRUE(s.moe_permute_fusion);
  EXPECT_TRUE(s.moe_router_fusion);
  EXPECT_TRUE(s.moe_grouped_gemm);
  EXPECT_TRUE(s.moe_aux_loss);
  EXPECT_TRUE(s.moe_router_force_load_balancing);
  EXPECT_TRUE(s.bias_activation_fusion);
  EXPECT_FALSE(s.bias_dropout_fusion);
  EXPECT_TRUE(s.te_cross_entropy);
  EXPECT_EQ(s.cuda_graph_impl, "none");
  EXPECT_TRUE(s.cuda_graph_scope.empty());
}

TEST(HostSettings, SetFindsTheSection) {
  const Scenario s = load_scenario("qwen3-30b-a3b-16xh100", {"cuda_graph_impl=transformer_engine",
                                                            R"(cuda_graph_scope=["attn","moe_router"])"});
  EXPECT_EQ(s.software.cuda_graph_impl, "transformer_engine");
  EXPECT_EQ(s.software.cuda_graph_scope, (std::vector<std::string>{"attn", "moe_router"}));
}

TEST(HostSettings, BadValuesNameTheField) {
  EXPECT_EQ(error_of(nlohmann::json::array()), "test.json: software: must be an object");
  EXPECT_EQ(error_of({{"moe_permute_fusion", "yes"}}).rfind("test.json: software.moe_permute_fusion: ", 0), 0u);
  EXPECT_EQ(error_of({{"cuda_graph_impl", "cudagraph"}}),
            "test.json: software.cuda_graph_impl: 'cudagraph' is not one of: none, transformer_engine, local");
  EXPECT_EQ(error_of({{"cuda_graph_impl", "local"}, {"cuda_graph_scope", {"experts"}}}),
            "test.json: software.cuda_graph_scope: unknown scope \"experts\" (attn, mlp, moe, moe_router, "
            "moe_preprocess, full_iteration)");
  EXPECT_EQ(error_of({{"cuda_graph_scope", {"attn"}}}),
            "test.json: software.cuda_graph_scope: needs cuda_graph_impl transformer_engine or local (CUDA graphs are "
            "off)");
  EXPECT_EQ(error_of({{"moe_permute_fusoin", true}}).rfind("test.json: software.moe_permute_fusoin: ", 0), 0u);
}

// from-megatron writes the section from Megatron-LM's flags, at its
// command-line defaults (arguments.py: the bias-activation and bias-dropout
// fusions on unless --no-bias-swiglu-fusion / --no-bias-dropout-fusion).
TEST(HostSettings, FromMegatronFlags) {
  const std::vector<std::string> model = {"--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "4",
                                          "--seq-length", "128", "--vocab-size", "1024", "--bf16", "--swiglu"};
  auto software = [&](std::vector<std::string> flags) {
    flags.insert(flags.begin(), model.begin(), model.end());
    return megatron_scenario(flags, {"H100-SXM", "dgx-h100-superpod", 8}, "launch.sh").document.value(
        "software", nlohmann::ordered_json::object());
  };
  EXPECT_EQ(software({}), (nlohmann::ordered_json{{"bias_activation_fusion", true}, {"bias_dropout_fusion", true}}));
  EXPECT_EQ(software({"--no-bias-swiglu-fusion", "--no-bias-dropout-fusion"}), nlohmann::ordered_json::object());
  const nlohmann::ordered_json moe =
      software({"--num-experts", "8", "--expert-model-parallel-size", "8", "--moe-grouped-gemm", "--moe-permute-fusion",
                "--moe-router-fusion", "--moe-aux-loss-coeff", "1e-3", "--cross-entropy-loss-fusion",
                "--cross-entropy-fusion-impl", "te", "--cuda-graph-impl", "transformer_engine", "--cuda-graph-scope",
                "attn", "moe_router"});
  EXPECT_EQ(moe["moe_permute_fusion"], true);
  EXPECT_EQ(moe["moe_router_fusion"], true);
  EXPECT_FALSE(moe.contains("moe_grouped_gemm"));  // the default
  EXPECT_FALSE(moe.contains("moe_aux_loss"));      // the default: on
  EXPECT_EQ(moe["te_cross_entropy"], true);
  EXPECT_EQ(moe["cuda_graph_impl"], "transformer_engine");
  EXPECT_EQ(moe["cuda_graph_scope"], (nlohmann::ordered_json{"attn", "moe_router"}));
  EXPECT_EQ(software({"--num-experts", "8", "--expert-model-parallel-size", "8"})["moe_aux_loss"], false);
}
