#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/input_error.hpp"
#include "sim/scenario/scenario.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using simtrain::fixtures::error_loading;
using simtrain::fixtures::read_json;
using testing::AllOf;
using testing::HasSubstr;

const fs::path source_dir = SIMTRAIN_SOURCE_DIR;

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// Each test gets a fresh directory for the files it writes.
class ScenarioTest : public testing::Test {
protected:

  // tiny-4gpu, the base every test changes.
  static json base() { return read_json(source_dir / "scenarios/tiny-4gpu.json"); }

  std::string write(const std::string& name, const json& document) {
    write_text(dir_ / name, document.dump(2));
    return (dir_ / name).string();
  }

  std::string scenario_path() const { return (dir_ / "scenario.json").string(); }

  // Loads the base changed by `change` (from dir/scenario.json); returns the InputError's message.
  std::string error_of(const std::function<void(json&)>& change) {
    json document = base();
    change(document);
    return error_loading(write("scenario.json", document));
  }

  simtrain::fixtures::TemporaryDirectory temporary_{"scenario"};
  const fs::path& dir_ = temporary_.path();
};

// ---- shipped scenarios ----------------------------------------------------

TEST(ShippedScenarios, EveryFileLoadsAndFillsTheCluster) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(source_dir / "scenarios")) {
    if (!entry.is_regular_file()) continue;  // scenarios/models/ holds model files, not scenarios
    SCOPED_TRACE(entry.path().string());
    const Scenario s = load_scenario(entry.path().string());
    EXPECT_EQ(s.name, entry.path().stem().string());
    EXPECT_EQ(s.parallel.world_size(), s.cluster.num_gpus);
    EXPECT_EQ(s.training.global_batch_size % (s.training.micro_batch_size * s.parallel.data), 0);
    ++count;
  }
  EXPECT_GE(count, 5);
}

TEST(ShippedScenarios, DataParallelSizeIsDerived) {
  const Scenario s = load_scenario((source_dir / "scenarios/gpt3-175b-1024xh100.json").string());
  EXPECT_EQ(s.parallel.tensor, 8);
  EXPECT_EQ(s.parallel.pipeline, 8);
  EXPECT_EQ(s.parallel.data, 16);
  EXPECT_EQ(s.micro_batches(), 1536 / 16);
  EXPECT_EQ(s.cluster.gpu.name, "H100-SXM");
  EXPECT_EQ(s.cluster.topology.name, "dgx-h100-superpod");
}

TEST(ShippedScenarios, LoadByBuiltInName) {
  const Scenario s = load_scenario("tiny-4gpu");
  EXPECT_EQ(s.name, "tiny-4gpu");
  EXPECT_EQ(s.cluster.num_gpus, 4);
  EXPECT_EQ(s.parallel.data, 1);
  EXPECT_EQ(s.model.hidden_size, 1024);
  EXPECT_EQ(s.parallel.schedule, ScheduleKind::one_f_one_b);
  EXPECT_EQ(s.parallel.p2p_communication, P2pCommunication::paired);
}

TEST(ShippedScenarios, PipelineTransfersPairedUnlessOverlappedOrAskedEager) {
  EXPECT_EQ(load_scenario("tiny-4gpu", {"p2p_communication=eager"}).parallel.p2p_communication,
            P2pCommunication::eager);
  EXPECT_EQ(load_scenario("tiny-4gpu", {"overlap_p2p_communication=true"}).parallel.p2p_communication,
            P2pCommunication::eager);
}

// ---- --set overrides ------------------------------------------------------

const std::string gpt3 = (source_dir / "scenarios/gpt3-175b-1024xh100.json").string();

TEST(Overrides, BareKeyFindsItsSection) {
  const Scenario s = load_scenario(gpt3, {"pipeline_model_parallel_size=16", "micro_batch_size=2"});
  EXPECT_EQ(s.parallel.pipeline, 16);
  EXPECT_EQ(s.parallel.data, 8);
  EXPECT_EQ(s.training.micro_batch_size, 2);
  EXPECT_EQ(s.document["parallelism"]["pipeline_model_parallel_size"], 16);
}

TEST(Overrides, DottedPath) {
  EXPECT_EQ(load_scenario(gpt3, {"training.global_batch_size=3072"}).training.global_batch_size, 3072);
}

TEST(Overrides, BareWordIsAString) {
  EXPECT_EQ(load_scenario(gpt3, {"schedule=gpipe"}).parallel.schedule, ScheduleKind::gpipe);
  EXPECT_EQ(load_scenario("tiny-4gpu", {"gpu=H200"}).cluster.gpu.name, "H200");
}

// Megatron's defaults: gradients reduced in fp32, the weight gather after the optimizer.
TEST(Overrides, GradientDtypeAndParamGatherOverlap) {
  const Scenario defaults = load_scenario(gpt3);
  EXPECT_FALSE(defaults.parallel.grad_reduce_in_bf16);
  EXPECT_FALSE(defaults.parallel.overlap_param_gather);
  const Scenario s = load_scenario(gpt3, {"grad_reduce_in_bf16=true", "overlap_param_gather=true"});
  EXPECT_TRUE(s.parallel.grad_reduce_in_bf16);
  EXPECT_TRUE(s.parallel.overlap_param_gather);
}

TEST(Overrides, UnknownKeyIsRefused) {
  EXPECT_THAT(error_loading(gpt3, {"hiden_size=4096"}),
              AllOf(HasSubstr("hiden_size"), HasSubstr("unknown field")));
}

TEST(Overrides, OverridesAreCheckedLikeTheFile) {
  EXPECT_THAT(error_loading(gpt3, {"pipeline_model_parallel_size=7"}),
              AllOf(HasSubstr("parallelism.pipeline_model_parallel_size"), HasSubstr("must divide num_hidden_layers")));
}

// ---- bad scenarios: each names the file, the field and the reason ---------

struct BadCase {
  std::string name;
  std::function<void(json&)> change;
  std::string field;
  std::string reason;
};

void PrintTo(const BadCase& c, std::ostream* out) { *out << c.name; }

class BadScenario : public ScenarioTest, public testing::WithParamInterface<BadCase> {};

TEST_P(BadScenario, NamesFileFieldAndReason) {
  const std::string message = error_of(GetParam().change);
  EXPECT_THAT(message, AllOf(HasSubstr(scenario_path()), HasSubstr(GetParam().field), HasSubstr(GetParam().reason)));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// A GPU described inline, every field given.
json custom_gpu() {
  return {{"name", "custom"},   {"peak_bf16_tflops", 989}, {"hbm_GBps", 3350},
          {"memory_GiB", 80},   {"sm_count", 132},         {"tensor_clock_MHz", 1830},
          {"sustained_tensor_clock_MHz", 1649}};
}

const BadCase bad_cases[] = {
    {"missing_required_field", [](json& s) { s["training"].erase("seq_length"); }, "training.seq_length", "missing"},
    {"mistyped_field",
     [](json& s) {
       s["parallelism"].erase("tensor_model_parallel_size");
       s["parallelism"]["tensor_model_paralel_size"] = 2;
     },
     "parallelism.tensor_model_paralel_size", "unknown field (did you mean 'tensor_model_parallel_size'?)"},
    {"mistyped_top_level_field", [](json& s) { s["paralelism"] = s["parallelism"]; }, "paralelism",
     "did you mean 'parallelism'"},
    {"string_for_integer", [](json& s) { s["parallelism"]["tensor_model_parallel_size"] = "2"; },
     "parallelism.tensor_model_parallel_size", "expected an integer, got \"2\""},
    {"fraction_for_integer", [](json& s) { s["training"]["micro_batch_size"] = 1.5; }, "training.micro_batch_size",
     "expected an integer"},
    {"section_not_an_object", [](json& s) { s["training"] = "fast"; }, "training", "expected a JSON object"},
    {"heads_not_divisible_by_tp", [](json& s) { s["parallelism"]["tensor_model_parallel_size"] = 3; },
     "parallelism.tensor_model_parallel_size", "must divide num_attention_heads (16), got 3"},
    {"layers_not_divisible_by_pp", [](json& s) { s["parallelism"]["pipeline_model_parallel_size"] = 3; },
     "parallelism.pipeline_model_parallel_size", "must divide num_hidden_layers (8), got 3"},
    {"stage_layers_not_divisible_by_virtual_stage",
     [](json& s) {
       s["parallelism"]["schedule"] = "interleaved_1f1b";
       s["parallelism"]["num_layers_per_virtual_pipeline_stage"] = 3;
     },
     "parallelism.num_layers_per_virtual_pipeline_stage", "must divide the layers per pipeline stage (4), got 3"},
    {"gpus_not_a_multiple_of_model_parallel", [](json& s) { s["cluster"]["num_gpus"] = 6; }, "cluster.num_gpus",
     "must be a multiple of tensor x pipeline parallel size (4), got 6"},
    {"global_batch_not_a_multiple", [](json& s) { s["training"]["micro_batch_size"] = 3; },
     "training.global_batch_size", "must be a multiple of micro_batch_size x data parallel size (3 x 1), got 8"},
    {"data_parallel_size_inconsistent", [](json& s) { s["parallelism"]["data_parallel_size"] = 2; },
     "parallelism.data_parallel_size", "is 2 but num_gpus / (tensor x pipeline) = 1"},
    {"interleaved_micro_batches_not_a_multiple_of_pp",
     [](json& s) {
       s["parallelism"]["schedule"] = "interleaved_1f1b";
       s["parallelism"]["num_layers_per_virtual_pipeline_stage"] = 2;
       s["training"]["global_batch_size"] = 5;
     },
     "training.global_batch_size", "micro-batches per pipeline (5) to be a multiple of pipeline_model_parallel_size (2)"},
    {"interleaved_without_virtual_stages", [](json& s) { s["parallelism"]["schedule"] = "interleaved_1f1b"; },
     "parallelism.schedule", "interleaved_1f1b needs num_layers_per_virtual_pipeline_stage"},
    {"virtual_stages_without_interleaving",
     [](json& s) { s["parallelism"]["num_layers_per_virtual_pipeline_stage"] = 2; },
     "parallelism.num_layers_per_virtual_pipeline_stage", "only used by the interleaved_1f1b schedule"},
    {"unknown_schedule", [](json& s) { s["parallelism"]["schedule"] = "2f2b"; }, "parallelism.schedule",
     "'2f2b' is not one of: gpipe, 1f1b, interleaved_1f1b, zb_h1"},
    {"unknown_p2p_communication", [](json& s) { s["parallelism"]["p2p_communication"] = "rendezvous"; },
     "parallelism.p2p_communication", "'rendezvous' is not one of: paired, eager"},
    {"paired_p2p_with_overlap",
     [](json& s) {
       s["parallelism"]["p2p_communication"] = "paired";
       s["parallelism"]["overlap_p2p_communication"] = true;
     },
     "parallelism.p2p_communication", "overlap_p2p_communication needs eager"},
    {"unknown_gpu", [](json& s) { s["cluster"]["gpu"] = "B300"; }, "cluster.gpu",
     "unknown GPU 'B300' (known: A100-80GB, H100-SXM, H200, H800, B200, GB200, MI300X)"},
    {"custom_gpu_without_sm_count",
     [](json& s) {
       s["cluster"]["gpu"] = custom_gpu();
       s["cluster"]["gpu"].erase("sm_count");
     },
     "cluster.gpu.sm_count", "missing"},
    {"custom_gpu_without_sustained_clock",
     [](json& s) {
       s["cluster"]["gpu"] = custom_gpu();
       s["cluster"]["gpu"].erase("sustained_tensor_clock_MHz");
     },
     "cluster.gpu.sustained_tensor_clock_MHz", "missing"},
    {"custom_gpu_sustaining_more_than_its_clock",
     [](json& s) {
       s["cluster"]["gpu"] = custom_gpu();
       s["cluster"]["gpu"]["sustained_tensor_clock_MHz"] = 2000;
     },
     "cluster.gpu.sustained_tensor_clock_MHz", "must be at most tensor_clock_MHz (1830), got 2000"},
    {"custom_gpu_sustaining_more_than_its_clock_in_fp8",
     [](json& s) {
       s["cluster"]["gpu"] = custom_gpu();
       s["cluster"]["gpu"]["sustained_fp8_tensor_clock_MHz"] = 2000;
     },
     "cluster.gpu.sustained_fp8_tensor_clock_MHz", "must be at most tensor_clock_MHz (1830), got 2000"},
    {"custom_gpu_achieving_more_than_its_peak",
     [](json& s) {
       s["cluster"]["gpu"] = custom_gpu();
       s["cluster"]["gpu"]["achievable_matmul_bf16_tflops"] = 1000;
     },
     "cluster.gpu.achievable_matmul_bf16_tflops", "must be at most peak_bf16_tflops (989), got 1000"},
    {"custom_gpu_renting_below_zero",
     [](json& s) {
       s["cluster"]["gpu"] = custom_gpu();
       s["cluster"]["gpu"]["rental_usd_per_gpu_hour"] = -1;
     },
     "cluster.gpu.rental_usd_per_gpu_hour", "must be a finite number of at least 0, got -1"},
    {"unknown_topology", [](json& s) { s["cluster"]["topology"] = "my-cluster"; }, "cluster.topology",
     "unknown topology 'my-cluster' (built in: dgx-a100-superpod, dgx-b200-superpod, dgx-gb200-nvl72-superpod, dgx-h100-superpod"},
    {"fp8_on_a100",
     [](json& s) {
       s["cluster"]["gpu"] = "A100-80GB";
       s["training"]["dtype"] = "fp8";
     },
     "training.dtype", "fp8 is not supported by GPU A100-80GB"},
    {"fp8_recipe_without_fp8", [](json& s) { s["training"]["fp8_recipe"] = "tensorwise"; }, "training.fp8_recipe",
     "is for fp8 training (training.dtype \"fp8\"), got dtype bf16"},
    {"fp8_recipe_unknown",
     [](json& s) {
       s["training"]["dtype"] = "fp8";
       s["training"]["fp8_recipe"] = "blockwise";
     },
     "training.fp8_recipe", "blockwise"},
    {"mxfp8_without_block_scaled_tensor_cores",
     [](json& s) {
       s["training"]["dtype"] = "fp8";
       s["training"]["fp8_recipe"] = "mxfp8";
     },
     "training.fp8_recipe", "mxfp8"},
    {"grad_reduce_in_bf16_not_a_boolean", [](json& s) { s["parallelism"]["grad_reduce_in_bf16"] = "yes"; },
     "parallelism.grad_reduce_in_bf16", "expected true or false, got \"yes\""},
    {"grad_reduce_in_bf16_with_fp16",
     [](json& s) {
       s["training"]["dtype"] = "fp16";
       s["parallelism"]["grad_reduce_in_bf16"] = true;
     },
     "parallelism.grad_reduce_in_bf16", "is for bf16 or fp8 training, not fp16"},
    {"overlap_param_gather_not_a_boolean", [](json& s) { s["parallelism"]["overlap_param_gather"] = 1; },
     "parallelism.overlap_param_gather", "expected true or false, got 1"},
    {"overlap_param_gather_without_distributed_optimizer",
     [](json& s) {
       s["parallelism"]["overlap_grad_reduce"] = true;
       s["parallelism"]["overlap_param_gather"] = true;
     },
     "parallelism.overlap_param_gather", "needs zero_stage 1 or 2, got 0"},
    {"overlap_param_gather_with_zero_3",
     [](json& s) {
       s["parallelism"]["zero_stage"] = 3;
       s["parallelism"]["overlap_grad_reduce"] = true;
       s["parallelism"]["overlap_param_gather"] = true;
     },
     "parallelism.overlap_param_gather", "needs zero_stage 1 or 2, got 3"},
    {"overlap_param_gather_without_overlap_grad_reduce",
     [](json& s) {
       s["parallelism"]["zero_stage"] = 1;
       s["parallelism"]["overlap_param_gather"] = true;
     },
     "parallelism.overlap_param_gather", "needs overlap_grad_reduce, as in Megatron-LM"},
    {"tp_comm_overlap_without_sequence_parallel", [](json& s) { s["parallelism"]["tp_comm_overlap"] = true; },
     "parallelism.tp_comm_overlap", "needs sequence_parallel, as in Megatron-LM"},
    {"recompute_method_without_full_recompute",
     [](json& s) {
       s["training"]["recompute_granularity"] = "selective";
       s["training"]["recompute_method"] = "block";
     },
     "training.recompute_method", "only applies to recompute_granularity full"},
    {"block_recompute_without_its_layers",
     [](json& s) {
       s["training"]["recompute_granularity"] = "full";
       s["training"]["recompute_method"] = "block";
     },
     "training.recompute_num_layers", "missing: recompute_method block recomputes the first N layers of each model stage"},
    {"uniform_recompute_of_groups",
     [](json& s) {
       s["training"]["recompute_granularity"] = "full";
       s["training"]["recompute_num_layers"] = 2;
     },
     "training.recompute_num_layers", "uniform recompute of groups of 2 layers is not simulated"},
    {"block_recompute_of_no_layer",
     [](json& s) {
       s["training"]["recompute_granularity"] = "full";
       s["training"]["recompute_method"] = "block";
       s["training"]["recompute_num_layers"] = 0;
     },
     "training.recompute_num_layers", "must be at least 1, got 0"},
    {"recompute_modules_without_selective_recompute",
     [](json& s) {
       s["training"]["recompute_granularity"] = "full";
       s["training"]["recompute_modules"] = {"core_attn"};
     },
     "training.recompute_modules", "only applies to recompute_granularity selective"},
    {"recompute_modules_not_a_list",
     [](json& s) {
       s["training"]["recompute_granularity"] = "selective";
       s["training"]["recompute_modules"] = "core_attn";
     },
     "training.recompute_modules", "expected a list of module names, got \"core_attn\""},
    {"recompute_module_unknown",
     [](json& s) {
       s["training"]["recompute_granularity"] = "selective";
       s["training"]["recompute_modules"] = {"attention"};
     },
     "training.recompute_modules", "expected module names among core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                                   "shared_experts, got \"attention\""},
    {"recompute_module_not_simulated",
     [](json& s) {
       s["training"]["recompute_granularity"] = "selective";
       s["training"]["recompute_modules"] = {"core_attn", "moe"};
     },
     "training.recompute_modules", "recomputing moe is not simulated"},
    {"mla_up_proj_without_latent_attention",
     [](json& s) {
       s["training"]["recompute_granularity"] = "selective";
       s["training"]["recompute_modules"] = {"mla_up_proj"};
     },
     "training.recompute_modules", "mla_up_proj needs latent attention (model.kv_lora_rank)"},
    {"zero_stage_4", [](json& s) { s["parallelism"]["zero_stage"] = 4; }, "parallelism.zero_stage",
     "must be 0, 1, 2 or 3"},
    {"negative_zero_stage", [](json& s) { s["parallelism"]["zero_stage"] = -1; }, "parallelism.zero_stage",
     "must be at least 0, got -1"},
    {"zero_micro_batch", [](json& s) { s["training"]["micro_batch_size"] = 0; }, "training.micro_batch_size",
     "must be at least 1, got 0"},
    {"negative_hidden_size", [](json& s) { s["model"]["hidden_size"] = -1024; }, "model.hidden_size",
     "must be at least 1, got -1024"},
    {"negative_tp", [](json& s) { s["parallelism"]["tensor_model_parallel_size"] = -2; },
     "parallelism.tensor_model_parallel_size", "must be at least 1, got -2"},
    {"zero_gpus", [](json& s) { s["cluster"]["num_gpus"] = 0; }, "cluster.num_gpus", "must be at least 1, got 0"},
    {"heads_not_dividing_hidden", [](json& s) { s["model"]["num_attention_heads"] = 15; },
     "model.num_attention_heads", "must divide hidden_size (1024)"},
    {"seq_longer_than_positions", [](json& s) { s["training"]["seq_length"] = 2048; }, "training.seq_length",
     "exceeds the model's max_position_embeddings (1024)"},
};

INSTANTIATE_TEST_SUITE_P(Scenario, BadScenario, testing::ValuesIn(bad_cases),
                         [](const testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST_F(ScenarioTest, NonExistentFile) {
  const std::string path = (dir_ / "nowhere.json").string();
  EXPECT_THAT(error_loading(path), AllOf(HasSubstr(path), HasSubstr("no such file")));
}

TEST_F(ScenarioTest, MalformedJson) {
  write_text(dir_ / "scenario.json", "{\"name\": \"broken\",\n \"model\": {\n");
  EXPECT_THAT(error_loading(scenario_path()), AllOf(HasSubstr(scenario_path()), HasSubstr("malformed JSON")));
}

TEST_F(ScenarioTest, TopologyFileThatDoesNotExist) {
  const std::string message = error_of([](json& s) { s["cluster"]["topology"] = "no-such-topology.json"; });
  EXPECT_THAT(message, AllOf(HasSubstr((dir_ / "no-such-topology.json").string()), HasSubstr("no such file")));
}

// ---- Hugging Face config.json as the model --------------------------------

TEST_F(ScenarioTest, LlamaConfigJson) {
  write("config.json", {{"architectures", {"LlamaForCausalLM"}},
                        {"model_type", "llama"},
                        {"hidden_size", 4096},
                        {"num_hidden_layers", 32},
                        {"num_attention_heads", 32},
                        {"num_key_value_heads", 8},
                        {"intermediate_size", 14336},
                        {"vocab_size", 128256},
                        {"max_position_embeddings", 131072},
                        {"rms_norm_eps", 1e-5},
                        {"rope_theta", 500000.0},
                        {"rope_scaling", nullptr},
                        {"hidden_act", "silu"},
                        {"tie_word_embeddings", false},
                        {"torch_dtype", "bfloat16"},
                        {"bos_token_id", 128000},
                        {"eos_token_id", 128001}});
  json document = base();
  document["model"] = "config.json";  // relative to the scenario's directory
  const Scenario s = load_scenario(write("scenario.json", document));
  const ModelConfig& m = s.model;
  EXPECT_EQ(m.name, "llama");
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.num_layers, 32);
  EXPECT_EQ(m.num_attention_heads, 32);
  EXPECT_EQ(m.num_key_value_heads, 8);
  EXPECT_EQ(m.intermediate_size, 14336);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_TRUE(m.gated_mlp);
  EXPECT_TRUE(m.rms_norm);
  EXPECT_FALSE(m.linear_bias);
  EXPECT_FALSE(m.learned_position_embeddings);
  EXPECT_FALSE(m.tie_word_embeddings);

  // Model fields of a config file can be overridden too.
  EXPECT_EQ(load_scenario(scenario_path(), {"num_hidden_layers=16"}).model.num_layers, 16);
}

// The workload builds models whose layers are all MoE (Mixtral, Qwen3-MoE),
// and those mixing dense and MoE layers with latent attention (DeepSeek-V3).
TEST_F(ScenarioTest, ModelsWithExpertsAndLatentAttentionLoad) {
  json inline_experts = base();
  inline_experts["model"].update({{"num_experts", 8}, {"num_experts_per_tok", 2}});
  EXPECT_NO_THROW(load_scenario(write("scenario.json", inline_experts)));
  for (const char* model : {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"}) {
    json document = base();
    document["model"] = (source_dir / "scenarios/models" / (std::string(model) + ".json")).string();
    document["parallelism"]["pipeline_layers"] = "auto";  // DeepSeek-V3's 61 layers split unevenly
    EXPECT_NO_THROW(load_scenario(write("scenario.json", document))) << model;
  }
  json latent = base();
  latent["model"].update({{"linear_bias", false}, {"kv_lora_rank", 128}, {"qk_nope_head_dim", 32},
                          {"qk_rope_head_dim", 16}, {"v_head_dim", 32}});
  EXPECT_NO_THROW(load_scenario(write("scenario.json", latent)));
}

TEST_F(ScenarioTest, Gpt2ConfigJson) {
  write("config.json", {{"model_type", "gpt2"},
                        {"n_embd", 768},
                        {"n_layer", 12},
                        {"n_head", 12},
                        {"n_positions", 1024},
                        {"n_ctx", 1024},
                        {"n_inner", nullptr},
                        {"vocab_size", 50257},
                        {"activation_function", "gelu_new"},
                        {"layer_norm_epsilon", 1e-5}});
  json document = base();
  document["model"] = "config.json";
  const ModelConfig m = load_scenario(write("scenario.json", document)).model;
  EXPECT_EQ(m.hidden_size, 768);
  EXPECT_EQ(m.num_layers, 12);
  EXPECT_EQ(m.num_attention_heads, 12);
  EXPECT_EQ(m.num_key_value_heads, 12);
  EXPECT_EQ(m.intermediate_size, 4 * 768);
  EXPECT_EQ(m.max_position_embeddings, 1024);
  EXPECT_FALSE(m.gated_mlp);
  EXPECT_FALSE(m.rms_norm);
  EXPECT_TRUE(m.linear_bias);
  EXPECT_TRUE(m.learned_position_embeddings);
  EXPECT_TRUE(m.tie_word_embeddings);
}

TEST_F(ScenarioTest, ConfigJsonErrorsNameTheConfigFile) {
  write("config.json", {{"model_type", "llama"}, {"hidden_size", 4096}, {"num_hidden_layers", 32},
                        {"num_attention_heads", 32}});
  const std::string message = error_of([](json& s) { s["model"] = "config.json"; });
  EXPECT_THAT(message, AllOf(HasSubstr((dir_ / "config.json").string()), HasSubstr("vocab_size"), HasSubstr("missing")));
}

// ---- topology: inline object or a file ------------------------------------

TEST_F(ScenarioTest, InlineTopology) {
  json document = base();
  document["cluster"]["topology"] = read_json(source_dir / "topologies/dgx-h100-superpod.json");
  document["cluster"]["topology"]["name"] = "inline";
  const Topology t = load_scenario(write("scenario.json", document)).cluster.topology;
  EXPECT_EQ(t.name, "inline");
  EXPECT_EQ(t.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(t.nic_bytes_per_second, 400e9 / 8);
}

json small_topology(int gpus_per_node, int nics_per_node) {
  return {{"name", "small"},   {"gpus_per_node", gpus_per_node}, {"nics_per_node", nics_per_node},
          {"nvlink_GBps", 100}, {"nic_Gbps", 100},                {"nodes_per_unit", 2},
          {"units_per_pod", 1}};
}

TEST_F(ScenarioTest, TopologyFileRelativeToScenario) {
  write("small.json", small_topology(4, 2));
  json document = base();
  document["cluster"]["topology"] = "small.json";
  const Topology t = load_scenario(write("scenario.json", document)).cluster.topology;
  EXPECT_EQ(t.name, "small");
  EXPECT_EQ(t.gpus_per_node, 4);
  EXPECT_EQ(t.nics_per_node, 2);
  EXPECT_DOUBLE_EQ(t.nvlink_bytes_per_second, 100e9);
}

TEST_F(ScenarioTest, NicsMustDivideGpusPerNode) {
  EXPECT_THAT(error_of([](json& s) { s["cluster"]["topology"] = small_topology(8, 3); }),
              AllOf(HasSubstr(scenario_path()), HasSubstr("cluster.topology.nics_per_node"),
                    HasSubstr("must divide gpus_per_node (8)")));
  write("small.json", small_topology(8, 3));
  EXPECT_THAT(error_of([](json& s) { s["cluster"]["topology"] = "small.json"; }),
              AllOf(HasSubstr((dir_ / "small.json").string()), HasSubstr("nics_per_node"),
                    HasSubstr("must divide gpus_per_node (8)")));
}

TEST(GpuFromJson, ReadsTheGemmModelFields) {
  const GpuSpec gpu = gpu_from_json(custom_gpu(), "s.json", "cluster.gpu");
  EXPECT_EQ(gpu.sm_count, 132);
  EXPECT_DOUBLE_EQ(gpu.tensor_clock_hz, 1830e6);
  EXPECT_DOUBLE_EQ(gpu.sustained_tensor_clock_hz, 1649e6);
  EXPECT_EQ(gpu.sustained_fp8_tensor_clock_hz, 0);  // optional: fp8 at the bf16 clock
  json with_fp8 = custom_gpu();
  with_fp8["sustained_fp8_tensor_clock_MHz"] = 1500;
  EXPECT_DOUBLE_EQ(gpu_from_json(with_fp8, "s.json", "cluster.gpu").sustained_fp8_tensor_clock_hz, 1500e6);
}

}  // namespace
}  // namespace simtrain
