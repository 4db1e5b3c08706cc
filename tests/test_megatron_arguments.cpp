// `simtrain from-megatron` (sim/scenario/megatron_arguments.hpp) on the
// argument lists of Megatron-LM's own example scripts (tests/megatron/*.args,
// written out from the scripts): the scenario loads, its fields are what the
// flags say, and the SC'21 Table 1 rows simulate as the shipped scenarios of
// those rows do. On 20 public launch lines (tests/data/megatron_lines/*.args):
// each converts or is refused as its header says. And the shell-word splitter
// the command line goes through.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/base/input_error.hpp"
#include "sim/base/shell_words.hpp"
#include "sim/scenario/megatron_arguments.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Contains;
using testing::HasSubstr;
using testing::Not;

std::string arguments(const std::string& file) {
  return fixtures::read_text(fs::path(SIMTRAIN_SOURCE_DIR) / "tests" / "megatron" / file);
}

// from-megatron ARGS --gpu G --topology T --num-gpus N, the scenario it wrote to standard output.
struct Converted {
  fixtures::CliResult result;
  json scenario;
};
Converted from_megatron(const std::string& args, const std::string& gpu, const std::string& topology, int gpus,
                        const std::vector<std::string>& more = {}) {
  std::vector<std::string> command = {"from-megatron", args, "--gpu", gpu, "--topology", topology,
                                      "--num-gpus", std::to_string(gpus)};
  command.insert(command.end(), more.begin(), more.end());
  Converted c{fixtures::run_simtrain(command), {}};
  if (c.result.code == 0) c.scenario = json::parse(c.result.out);
  return c;
}

// A 4-layer model's launch line with `flags`, converted for 8 H100.
Converted small_model(const std::string& flags) {
  return from_megatron("--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1024 "
                       "--bf16 " + flags,
                       "H100-SXM", "dgx-h100-superpod", 8);
}

// The step time `simulate` reports for a scenario file, from its JSON report.
double step_seconds(const std::string& scenario, const fs::path& dir) {
  const std::string report = (dir / (fs::path(scenario).stem().string() + ".report.json")).string();
  const auto run = fixtures::run_simtrain({"simulate", scenario, "--quiet", "--no-sensitivity", "--report", report});
  EXPECT_EQ(run.code, 0) << run.err;
  return fixtures::read_json(report)["step_time_s"].get<double>();
}

TEST(ShellWords, SplitsAsAShellDoes) {
  EXPECT_EQ(shell_words("--a 1\t--b  '2 3' \"4 \\\"5\\\"\" x\\ y", "t"),
            (std::vector<std::string>{"--a", "1", "--b", "2 3", "4 \"5\"", "x y"}));
  EXPECT_EQ(shell_words("--a \\\n  --b # a comment\n--c '' #x", "t"),
            (std::vector<std::string>{"--a", "--b", "--c", ""}));
  EXPECT_EQ(shell_words("a#b '$HOME'", "t"), (std::vector<std::string>{"a#b", "$HOME"}));
  EXPECT_TRUE(shell_words("  \n ", "t").empty());
}

TEST(ShellWords, RefusesUnterminatedQuotesAndVariables) {
  auto error = [](const std::string& text) {
    try {
      shell_words(text, "args");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error("--a 'b"), "args: unterminated ' quote");
  EXPECT_EQ(error("--a \"b"), "args: unterminated \" quote");
  EXPECT_EQ(error("--tensor-model-parallel-size ${TP} --x"),
            "args: '${TP}': shell variables are not expanded; paste the arguments with their values");
  EXPECT_THAT(error("\"$DATA_PATH\""), HasSubstr("'$DATA_PATH': shell variables are not expanded"));
}

TEST(FromMegatron, Gpt3OfTheExamplesIsTheScenarioItsFlagsSay) {
  const Converted c = from_megatron(arguments("gpt3-175b-distributed.args"), "H100-SXM", "dgx-h100-superpod", 1024);
  ASSERT_EQ(c.result.code, 0) << c.result.err;
  EXPECT_EQ(c.scenario["model"], json::parse(R"({"hidden_size":12288,"num_hidden_layers":96,"num_attention_heads":96,
      "intermediate_size":49152,"vocab_size":51200,"max_position_embeddings":2048,"hidden_act":"gelu",
      "norm":"layernorm","linear_bias":true,"position_embedding":"learned","tie_word_embeddings":true})"));
  EXPECT_EQ(c.scenario["training"], json::parse(R"({"seq_length":2048,"micro_batch_size":1,"global_batch_size":1536,
      "dtype":"fp16","recompute_granularity":"none","flash_attention":true})"));
  EXPECT_EQ(c.scenario["parallelism"], json::parse(R"({"tensor_model_parallel_size":8,"pipeline_model_parallel_size":16})"));
  EXPECT_EQ(c.scenario["cluster"], json::parse(R"({"gpu":"H100-SXM","num_gpus":1024,"topology":"dgx-h100-superpod"})"));
  // Every other flag of the script is one that does not change the step time, and said so.
  EXPECT_THAT(c.result.err,
              HasSubstr("ignored (no effect on step time): --step-batch-size-schedule, --train-iters, --weight-decay, "
                        "--adam-beta1, --adam-beta2, --init-method-std, --clip-grad, --lr, --lr-decay-style, --min-lr, "
                        "--lr-warmup-fraction, --lr-decay-iters, --data-path, --split, --log-interval, "
                        "--save-interval, --eval-interval, --save, --load, --eval-iters, --tensorboard-dir\n"));
  EXPECT_THAT(c.result.err, HasSubstr("assumed: vocabulary: GPT-2's BPE (--vocab-file with --merge-file), 50257 tokens\n"
                                      "assumed: vocabulary padded from 50257 to 51200, a multiple of 1024"));
  EXPECT_EQ(c.scenario["description"].get<std::string>().rfind("From the Megatron-LM arguments: --num-layers 96 ", 0), 0u);
}

TEST(FromMegatron, TheLlama3ExampleNeedsIgnoreUnknownForWhatIsNotSimulated) {
  const std::string args = arguments("llama3-8b-h100-fp8.args");
  const Converted refused = from_megatron(args, "H100-SXM", "dgx-h100-superpod", 8);
  EXPECT_EQ(refused.result.code, 2);
  EXPECT_EQ(refused.result.out, "");
  EXPECT_THAT(refused.result.err,
              HasSubstr("simtrain: the Megatron-LM arguments: flags that may change the step time and are not simulated: "
                        "--calculate-per-token-loss, --manual-gc, "
                        "--empty-unused-memory-level "
                        "(--ignore-unknown writes the scenario without them)"));
  const Converted c = from_megatron(args, "H100-SXM", "dgx-h100-superpod", 8, {"--ignore-unknown"});
  ASSERT_EQ(c.result.code, 0) << c.result.err;
  EXPECT_THAT(c.result.err, HasSubstr("warning: not simulated, left out: --calculate-per-token-loss, --manual-gc"));
  EXPECT_THAT(c.result.err, HasSubstr("assumed: --sequence-parallel with TP 1: off, as Megatron-LM turns it off"));
  EXPECT_EQ(c.scenario["model"], json::parse(R"({"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
      "num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256,"hidden_act":"swiglu","norm":"rmsnorm",
      "linear_bias":false,"position_embedding":"rotary","tie_word_embeddings":false,"hidden_dropout":0.0,
      "attention_dropout":0.0})"));
  EXPECT_EQ(c.scenario["training"], json::parse(R"({"seq_length":8192,"micro_batch_size":1,"global_batch_size":128,
      "dtype":"fp8","fp8_param_gather":true,"recompute_granularity":"none","flash_attention":true})"));
  EXPECT_EQ(c.scenario["parallelism"], json::parse(R"({"tensor_model_parallel_size":1,"pipeline_model_parallel_size":1,
      "zero_stage":1,"overlap_grad_reduce":true,"overlap_param_gather":true,"grad_reduce_in_bf16":true})"));
}

// The shipped scenario of an SC'21 Table 1 row and the one from the row's
// arguments in Megatron-LM's run script: the same fields but the precision
// (the script's fp16, which the shipped one writes bf16: the same rate on
// A100) and, for --DDP-impl torch, the overlapped gradient reduction.
TEST(FromMegatron, Sc21Table1RowsAreTheShippedScenariosOfThoseRows) {
  fixtures::TemporaryDirectory dir{"megatron"};
  struct Row {
    std::string args, shipped;
    int gpus;
    json parallelism;
  };
  const std::vector<Row> rows = {
      {"sc21-table1-18b.args", "megatron-18.4b-256xa100", 256,
       json::parse(R"({"tensor_model_parallel_size":8,"pipeline_model_parallel_size":1,"overlap_grad_reduce":true})")},
      {"sc21-table1-145b.args", "megatron-145.6b-1536xa100", 1536,
       json::parse(R"({"tensor_model_parallel_size":8,"pipeline_model_parallel_size":8,
                       "num_layers_per_virtual_pipeline_stage":5})")}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.args);
    const std::string generated = (dir.path() / (row.shipped + ".generated.json")).string();
    const auto run = fixtures::run_simtrain({"from-megatron", arguments(row.args), "--gpu", "A100-80GB", "--topology",
                                             "dgx-a100-superpod", "--num-gpus", std::to_string(row.gpus), "--out",
                                             generated});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("is of Megatron-LM of 2021, before FlashAttention: attention unfused"));
    EXPECT_THAT(run.out, HasSubstr("Megatron-LM's default since September 2021; before, they blocked: --set "
                                   "async_tensor_model_parallel_allreduce=false"));
    const json scenario = fixtures::read_json(generated);
    const json shipped = fixtures::read_json(fs::path(SIMTRAIN_SOURCE_DIR) / "scenarios" / (row.shipped + ".json"));
    for (const auto& [key, value] : shipped["model"].items())
      if (key != "name") EXPECT_EQ(scenario["model"][key], value) << key;
    json training = shipped["training"];
    training["dtype"] = "fp16";
    EXPECT_EQ(scenario["training"], training);
    EXPECT_EQ(scenario["parallelism"], row.parallelism);
    EXPECT_EQ(scenario["cluster"], shipped["cluster"]);
  }
}

// The shipped row also says what its arguments cannot: the Megatron-LM of
// its runs (early 2021) all-reduced TP input gradients synchronously.
TEST(FromMegatron, TheSc21RowsSimulateAsTheShippedScenarios) {
  fixtures::TemporaryDirectory dir{"megatron"};
  const std::string generated = (dir.path() / "145b.json").string();
  ASSERT_EQ(fixtures::run_simtrain({"from-megatron", arguments("sc21-table1-145b.args"), "--gpu", "A100-80GB",
                                    "--topology", "dgx-a100-superpod", "--num-gpus", "1536", "--out", generated})
                .code,
            0);
  json scenario = fixtures::read_json(generated);
  EXPECT_FALSE(scenario["parallelism"].contains("async_tensor_model_parallel_allreduce"));
  scenario["parallelism"]["async_tensor_model_parallel_allreduce"] = false;
  std::ofstream(generated) << scenario.dump();
  EXPECT_EQ(step_seconds(generated, dir.path()),
            step_seconds((fs::path(SIMTRAIN_SOURCE_DIR) / "scenarios/megatron-145.6b-1536xa100.json").string(), dir.path()));
}

// The flex dispatcher's flags as Megatron-Core reads them (Megatron-LM
// d98e8a64 transformer_config.py): --moe-enable-deepep (deprecated) picks
// the deepep backend and needs flex; --moe-deepep-num-sms (deprecated)
// stands for --moe-flex-dispatcher-num-sms unless that is given; hybridep
// is accepted, ncclep refused by the scenario.
TEST(FromMegatron, FlexDispatcherFlagsBecomeTheScenariosFields) {
  const std::string moe = "--swiglu --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 128 "
                          "--expert-model-parallel-size 4 --global-batch-size 16 ";
  const Converted c = small_model(moe + "--moe-token-dispatcher-type flex --moe-enable-deepep --moe-deepep-num-sms 24");
  ASSERT_EQ(c.result.code, 0) << c.result.err;
  EXPECT_EQ(c.scenario["parallelism"]["moe_token_dispatcher_type"], "flex");
  EXPECT_EQ(c.scenario["parallelism"]["moe_flex_dispatcher_backend"], "deepep");
  EXPECT_EQ(c.scenario["parallelism"]["moe_flex_dispatcher_num_sms"], 24);
  const Scenario s = fixtures::scenario_from(c.scenario);
  EXPECT_EQ(s.parallel.moe_dispatcher, MoeDispatcher::flex);
  EXPECT_EQ(s.parallel.moe_flex_dispatcher_num_sms, 24);
  const Converted both = small_model(moe + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep "
                                           "--moe-flex-dispatcher-num-sms 32 --moe-deepep-num-sms 24");
  ASSERT_EQ(both.result.code, 0) << both.result.err;
  EXPECT_EQ(both.scenario["parallelism"]["moe_flex_dispatcher_num_sms"], 32);

  const Converted not_flex = small_model(moe + "--moe-token-dispatcher-type alltoall --moe-enable-deepep");
  EXPECT_EQ(not_flex.result.code, 2);
  EXPECT_THAT(not_flex.result.err,
              HasSubstr("--moe-enable-deepep: DeepEP backend is only supported with flex token dispatcher (Megatron-Core)"));
  const Converted hybrid = small_model(moe + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep");
  ASSERT_EQ(hybrid.result.code, 0) << hybrid.result.err;
  EXPECT_EQ(hybrid.scenario["parallelism"]["moe_flex_dispatcher_backend"], "hybridep");
  EXPECT_FALSE(hybrid.scenario["parallelism"].contains("moe_flex_dispatcher_num_sms"));  // HybridEP's own default
  EXPECT_EQ(fixtures::scenario_from(hybrid.scenario).parallel.moe_flex_backend, FlexBackend::hybridep);
  // --moe-hybridep-num-sms (deprecated) stands for --moe-flex-dispatcher-num-sms;
  // beside a different --moe-deepep-num-sms it is refused, as Megatron-Core does.
  const Converted hybrid_sms = small_model(moe + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend "
                                                 "hybridep --moe-hybridep-num-sms 16");
  ASSERT_EQ(hybrid_sms.result.code, 0) << hybrid_sms.result.err;
  EXPECT_EQ(hybrid_sms.scenario["parallelism"]["moe_flex_dispatcher_num_sms"], 16);
  const Converted conflicting = small_model(moe + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend "
                                                  "hybridep --moe-hybridep-num-sms 16 --moe-deepep-num-sms 24");
  EXPECT_EQ(conflicting.result.code, 2);
  EXPECT_THAT(conflicting.result.err,
              HasSubstr("--moe-hybridep-num-sms 16: conflicts with --moe-deepep-num-sms (24); set a single "
                        "--moe-flex-dispatcher-num-sms instead (Megatron-Core)"));
  const Converted flex_ncclep =
      small_model(moe + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend ncclep");
  EXPECT_EQ(flex_ncclep.result.code, 2);
  EXPECT_THAT(flex_ncclep.result.err,
              HasSubstr("parallelism.moe_flex_dispatcher_backend: ncclep is not modelled: only DeepEP's (deepep) and "
                        "HybridEP's (hybridep) dispatch and combine are"));
  const Converted ncclep = small_model(moe + "--moe-token-dispatcher-type alltoall --moe-flex-dispatcher-backend ncclep");
  EXPECT_EQ(ncclep.result.code, 2);
  EXPECT_THAT(ncclep.result.err, HasSubstr("ncclep requires --moe-token-dispatcher-type flex (Megatron-Core)"));
}

TEST(FromMegatron, MixtureOfExpertsFlagsBecomeTheScenariosFields) {
  const Converted c = small_model(
      "--swiglu --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 128 --expert-model-parallel-size 4 "
      "--moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm --global-batch-size 16");
  ASSERT_EQ(c.result.code, 0) << c.result.err;
  EXPECT_EQ(c.scenario["model"]["num_experts"], 16);
  EXPECT_EQ(c.scenario["model"]["num_experts_per_tok"], 4);
  EXPECT_EQ(c.scenario["model"]["moe_intermediate_size"], 128);
  EXPECT_EQ(c.scenario["parallelism"]["expert_model_parallel_size"], 4);
  EXPECT_EQ(c.scenario["parallelism"]["moe_token_dispatcher_type"], "alltoall");
  EXPECT_EQ(c.scenario["parallelism"]["overlap_moe_expert_parallel_comm"], true);
  const Scenario s = fixtures::scenario_from(c.scenario);  // loads as written
  EXPECT_EQ(s.parallel.expert, 4);
  EXPECT_TRUE(s.parallel.overlap_ep_comm);
  EXPECT_FALSE(c.scenario["model"].contains("mlp_only_layers"));  // --moe-layer-freq 1: every layer MoE
}

// --no-async-tensor-model-parallel-allreduce turns the overlap off; the
// opt-in flag of August 2021 leaves it on, the default since.
TEST(FromMegatron, NoAsyncTensorParallelAllReduceTurnsTheOverlapOff) {
  const std::string line = "--tensor-model-parallel-size 2 --global-batch-size 16 ";
  const Converted off = small_model(line + "--no-async-tensor-model-parallel-allreduce");
  ASSERT_EQ(off.result.code, 0) << off.result.err;
  EXPECT_EQ(off.scenario["parallelism"]["async_tensor_model_parallel_allreduce"], false);
  EXPECT_FALSE(fixtures::scenario_from(off.scenario).parallel.async_tp_allreduce);
  const Converted on = small_model(line + "--async-tensor-model-parallel-allreduce");
  ASSERT_EQ(on.result.code, 0) << on.result.err;
  EXPECT_FALSE(on.scenario["parallelism"].contains("async_tensor_model_parallel_allreduce"));
  EXPECT_TRUE(fixtures::scenario_from(on.scenario).parallel.async_tp_allreduce);
}

// --hidden-dropout and --attention-dropout set the model's rates (the masks
// held for the backward, docs/memory.md); --fp8-param-gather keeps the fp8
// weights only, for fp8 training alone.
TEST(FromMegatron, DropoutRatesAndFp8ParameterGatherBecomeTheScenariosFields) {
  const std::string line = "--global-batch-size 16 ";
  const Converted none = small_model(line + "--hidden-dropout 0.0 --attention-dropout 0");
  ASSERT_EQ(none.result.code, 0) << none.result.err;
  EXPECT_EQ(none.scenario["model"]["hidden_dropout"], 0.0);
  EXPECT_EQ(fixtures::scenario_from(none.scenario).model.attention_dropout, 0.0);
  const Converted fp8 = small_model(line + "--fp8-format hybrid --fp8-param-gather");
  ASSERT_EQ(fp8.result.code, 0) << fp8.result.err;
  EXPECT_TRUE(fixtures::scenario_from(fp8.scenario).training.fp8_param_gather);
  EXPECT_THAT(small_model(line + "--fp8-param-gather").result.err,
              HasSubstr("--fp8-param-gather: is for fp8 training: --fp8-format missing"));
  EXPECT_THAT(small_model(line + "--hidden-dropout 1.5").result.err,
              HasSubstr("--hidden-dropout: expected a number from 0 to 1, got '1.5'"));
}

// --tp-comm-overlap (with --sequence-parallel, which Megatron-LM requires)
// becomes tp_comm_overlap; at TP 1 Megatron-LM turns both off.
TEST(FromMegatron, TpCommOverlapOverlapsTheTensorParallelCollectives) {
  const std::string line = "--global-batch-size 16 --sequence-parallel --tp-comm-overlap ";
  const Converted on = small_model(line + "--tensor-model-parallel-size 2");
  ASSERT_EQ(on.result.code, 0) << on.result.err;
  EXPECT_EQ(on.scenario["parallelism"]["tp_comm_overlap"], true);
  EXPECT_TRUE(fixtures::scenario_from(on.scenario).parallel.tp_comm_overlap);
  const Converted off = small_model(line + "--tensor-model-parallel-size 1");
  ASSERT_EQ(off.result.code, 0) << off.result.err;
  EXPECT_FALSE(off.scenario["parallelism"].contains("tp_comm_overlap"));
  EXPECT_THAT(off.result.err, HasSubstr("assumed: --tp-comm-overlap with TP 1: off, as Megatron-LM turns it off"));
}

// --recompute-method block recomputes the first --recompute-num-layers of
// each pipeline chunk: the scenario's recompute_method and recompute_num_layers.
// Uniform groups of layers are simulated one layer a group, and said so.
TEST(FromMegatron, BlockRecomputeBecomesTheScenariosRecomputeMethod) {
  const std::string full = "--global-batch-size 16 --recompute-granularity full ";
  const Converted block = small_model(full + "--recompute-method block --recompute-num-layers 1");
  ASSERT_EQ(block.result.code, 0) << block.result.err;
  EXPECT_EQ(block.scenario["training"]["recompute_method"], "block");
  EXPECT_EQ(block.scenario["training"]["recompute_num_layers"], 1);
  const Scenario s = fixtures::scenario_from(block.scenario);
  EXPECT_EQ(s.training.recompute, Recompute::full);
  EXPECT_EQ(s.training.recompute_block_layers, 1);
  const Converted uniform = small_model(full + "--recompute-method uniform --recompute-num-layers 2");
  ASSERT_EQ(uniform.result.code, 0) << uniform.result.err;
  EXPECT_FALSE(uniform.scenario["training"].contains("recompute_method"));
  EXPECT_FALSE(uniform.scenario["training"].contains("recompute_num_layers"));
  EXPECT_THAT(uniform.result.err, HasSubstr("assumed: uniform recompute in groups of 2 layers: each layer recomputed "
                                            "from its own input"));
}

// --recompute-modules: the scenario's recompute_modules under selective
// recompute (moe refused, naming it); without selective recompute it has no
// effect, as in Megatron-LM.
TEST(FromMegatron, RecomputeModulesBecomeTheScenariosField) {
  const std::string selective = "--global-batch-size 16 --recompute-granularity selective ";
  const Converted core_attn = small_model(selective + "--recompute-modules core_attn");
  ASSERT_EQ(core_attn.result.code, 0) << core_attn.result.err;
  EXPECT_EQ(core_attn.scenario["training"]["recompute_modules"], json::array({"core_attn"}));
  const Converted two = small_model(selective + "--recompute-modules core_attn mlp");
  ASSERT_EQ(two.result.code, 0) << two.result.err;
  EXPECT_EQ(two.scenario["training"]["recompute_modules"], json::array({"core_attn", "mlp"}));
  const Converted moe = small_model(selective + "--recompute-modules moe");
  EXPECT_EQ(moe.result.code, 2);
  EXPECT_THAT(moe.result.err, HasSubstr("training.recompute_modules: recomputing moe is not simulated"));
  const Converted full = small_model("--global-batch-size 16 --recompute-granularity full --recompute-modules mlp");
  ASSERT_EQ(full.result.code, 0) << full.result.err;
  EXPECT_FALSE(full.scenario["training"].contains("recompute_modules"));
  EXPECT_THAT(full.result.err,
              HasSubstr("assumed: --recompute-modules without selective recompute: no effect, as in Megatron-LM"));
}

// --moe-layer-freq as Megatron-Core reads it: an integer N makes layers 0, N,
// 2N, ... MoE; a list expression gives each layer (1 MoE, 0 dense). The
// dense ones become mlp_only_layers.
TEST(FromMegatron, MoeLayerFrequencyGivesTheDenseLayers) {
  const auto dense_layers = [](const std::string& frequency) {
    const Converted c = from_megatron(
        "--num-layers 6 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1024 --bf16 "
        "--num-experts 8 --global-batch-size 16 --moe-layer-freq " + frequency,
        "H100-SXM", "dgx-h100-superpod", 8);
    EXPECT_EQ(c.result.code, 0) << c.result.err;
    const Scenario s = fixtures::scenario_from(c.scenario);
    std::vector<int64_t> dense;
    for (int64_t layer = 0; layer < 6; ++layer)
      if (!s.model.is_moe_layer(layer)) dense.push_back(layer);
    return dense;
  };
  EXPECT_EQ(dense_layers("2"), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(dense_layers("3"), (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_EQ(dense_layers("[0]*2+[1]*4"), (std::vector<int64_t>{0, 1}));  // DeepSeek's first dense layers
  EXPECT_EQ(dense_layers("([1]*2+[0])*2"), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(dense_layers("[1,0,1,1,0,1]"), (std::vector<int64_t>{1, 4}));
}

// CP 2 x TP 2 of 8 GPUs: DP 2, and the default global batch is micro x DP.
TEST(FromMegatron, ContextParallelFlagsBecomeTheScenariosFields) {
  const Converted c = small_model("--position-embedding-type rope --tensor-model-parallel-size 2 "
                                  "--context-parallel-size 2 --cp-comm-type all_gather");
  ASSERT_EQ(c.result.code, 0) << c.result.err;
  EXPECT_EQ(c.scenario["parallelism"]["context_parallel_size"], 2);
  EXPECT_EQ(c.scenario["parallelism"]["cp_comm_type"], "all_gather");
  EXPECT_EQ(c.scenario["training"]["global_batch_size"], 2);
  const Scenario s = fixtures::scenario_from(c.scenario);  // loads as written
  EXPECT_EQ(s.parallel.context, 2);
  EXPECT_EQ(s.parallel.data, 2);
  // Ulysses: TE's all-to-all of heads.
  const Converted ulysses = small_model(
      "--position-embedding-type rope --tensor-model-parallel-size 2 --context-parallel-size 2 --cp-comm-type a2a");
  ASSERT_EQ(ulysses.result.code, 0) << ulysses.result.err;
  EXPECT_EQ(fixtures::scenario_from(ulysses.scenario).parallel.cp_comm_type, CpCommType::a2a);
  // Hierarchical: all-to-alls over 2 ranks, ring attention over 2 (CP 4 x TP 2 of 8 GPUs).
  const Converted hierarchical = small_model(
      "--position-embedding-type rope --tensor-model-parallel-size 2 --context-parallel-size 4 "
      "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2");
  ASSERT_EQ(hierarchical.result.code, 0) << hierarchical.result.err;
  EXPECT_EQ(hierarchical.scenario["parallelism"]["cp_comm_type"], "a2a+p2p");
  EXPECT_EQ(hierarchical.scenario["parallelism"]["hierarchical_context_parallel_sizes"], nlohmann::json({2, 2}));
  const Scenario h = fixtures::scenario_from(hierarchical.scenario);
  EXPECT_EQ(h.parallel.cp_comm_type, CpCommType::a2a_p2p);
  EXPECT_EQ(h.parallel.context_a2a(), 2);
  EXPECT_EQ(h.parallel.context_ring(), 2);
}

TEST(FromMegatron, WhatIsNotSimulatedIsRefusedNamingTheFlag) {
  const std::string base = "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                           "--vocab-size 1000 --bf16 ";
  auto error = [&](const std::string& more) {
    const Converted c = from_megatron(base + more, "H100-SXM", "dgx-h100-superpod", 8);
    EXPECT_EQ(c.result.code, 2) << more;
    EXPECT_EQ(c.result.out, "") << more;
    return c.result.err;
  };
  // a2a+p2p without its sizes, and sizes that are not integers: the scenario's field, and the flag.
  EXPECT_THAT(error("--context-parallel-size 2 --cp-comm-type a2a+p2p"),
              HasSubstr("parallelism.hierarchical_context_parallel_sizes: missing: cp_comm_type a2a+p2p needs the "
                        "inner and outer CP group sizes [A, B]"));
  EXPECT_THAT(error("--context-parallel-size 4 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 x"),
              HasSubstr("--hierarchical-context-parallel-sizes: expected an integer, got 'x'"));
  EXPECT_THAT(error("--num-experts 8 --moe-layer-freq ([0]+[1]*2)"),
              HasSubstr("--moe-layer-freq: gives 3 layers, the model has 4 (--num-layers)"));
  EXPECT_THAT(error("--num-experts 8 --moe-layer-freq [0]*2+[2]*2"),
              HasSubstr("--moe-layer-freq: expected an integer or a list expression such as [0]*3+[1]*58, got "
                        "'[0]*2+[2]*2': layer kinds are 0 (dense) or 1 (MoE), got 2"));
  EXPECT_THAT(error("--num-experts 8 --moe-layer-freq [1]*99999999"), HasSubstr("more than 65536 layers"));
  EXPECT_THAT(error("--num-experts 8 --moe-layer-freq 0"), HasSubstr("--moe-layer-freq: must be at least 1, got 0"));
  EXPECT_THAT(error("--num-layers x"), HasSubstr("--num-layers: expected an integer, got 'x'"));
  EXPECT_THAT(error("--tensor-model-parallel-size 0"), HasSubstr("--tensor-model-parallel-size: must be between 1"));
  EXPECT_THAT(error("--swiglu 1"), HasSubstr("--swiglu: takes no value, got '1'"));
  EXPECT_THAT(error("--fp16"), HasSubstr("the Megatron-LM arguments: --fp16: --bf16 given too: give one"));
  EXPECT_THAT(error("--fp8-format e5m2"), HasSubstr("--fp8-format: expected one of e4m3, hybrid, got 'e5m2'"));
  EXPECT_THAT(error("--no-such-flag 3 --manual-gc"),
              HasSubstr("not simulated: --no-such-flag, --manual-gc (--ignore-unknown"));
  EXPECT_THAT(error("--tensor-model-parallel-size 3"), HasSubstr("--num-gpus: 8 is not a multiple of TP x PP = 3"));
  // What the scenario then refuses is named too.
  EXPECT_THAT(error("--tensor-model-parallel-size 8"), HasSubstr("the generated scenario: "));
  const Converted fp32 = from_megatron("--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                                       "--vocab-size 1000",
                                       "H100-SXM", "dgx-h100-superpod", 8);
  EXPECT_THAT(fp32.result.err, HasSubstr("--bf16: missing: fp32 training (neither --bf16 nor --fp16) is not simulated"));
  const Converted no_vocabulary = from_megatron("--num-layers 4 --hidden-size 256 --num-attention-heads 4 "
                                                "--seq-length 128 --bf16 --tokenizer-type HuggingFaceTokenizer",
                                                "H100-SXM", "dgx-h100-superpod", 8);
  EXPECT_THAT(no_vocabulary.result.err,
              HasSubstr("--vocab-size: missing: the vocabulary of tokenizer HuggingFaceTokenizer is not in the arguments"));
}

TEST(FromMegatron, TheLauncherIsSkippedAndTheScenarioWrittenUnderTheOutputPolicy) {
  fixtures::TemporaryDirectory dir{"megatron"};
  const std::string out = (dir.path() / "mine.json").string();
  const std::string line = "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 "
                           "--num-attention-heads 4 --seq-length 128 --vocab-size 1000 --bf16 "
                           "--recompute-activations --tensor-model-parallel-size 2 --sequence-parallel "
                           "--virtual-pipeline-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                           "--global-batch-size 16";
  const auto run = fixtures::run_simtrain({"from-megatron", line, "--gpu", "H100-SXM", "--topology",
                                           "dgx-h100-superpod", "--num-gpus", "8", "--out", out});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("wrote " + out));
  const json scenario = fixtures::read_json(out);
  EXPECT_EQ(scenario["model"]["vocab_size"], 1024);  // padded to a multiple of 128 x TP 2
  EXPECT_EQ(scenario["training"]["recompute_granularity"], "selective");
  EXPECT_EQ(scenario["parallelism"], json::parse(R"({"tensor_model_parallel_size":2,"pipeline_model_parallel_size":2,
      "num_virtual_stages_per_pipeline_rank":2,"sequence_parallel":true})"));
  EXPECT_EQ(scenario["description"], "From the Megatron-LM arguments: " + line.substr(line.find("--num-layers")));
  const auto simulated = fixtures::run_simtrain({"simulate", out, "--quiet"});
  EXPECT_EQ(simulated.code, 0) << simulated.err;
  // The same again with the file there: refused, the file as it was; with --force replaced whole. A folder
  // that does not exist: refused before any work.
  const std::string written = fixtures::read_text(out);
  std::vector<std::string> again = {"from-megatron", line, "--gpu", "H100-SXM", "--topology", "dgx-h100-superpod",
                                    "--num-gpus", "8", "--out", out};
  const auto refused = fixtures::run_simtrain(again);
  EXPECT_EQ(refused.code, 2);
  EXPECT_EQ(refused.err, "simtrain: --out " + out + ": exists (pass --force to replace it)\n");
  EXPECT_EQ(fixtures::read_text(out), written);
  again.push_back("--force");
  EXPECT_EQ(fixtures::run_simtrain(again).code, 0);
  const auto missing = fixtures::run_simtrain({"from-megatron", line, "--gpu", "H100-SXM", "--topology",
                                               "dgx-h100-superpod", "--num-gpus", "8", "--out",
                                               (dir.path() / "no" / "x.json").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--out"));
}

// A launch line of tests/data/megatron_lines/: the arguments, the cluster its
// script runs on (`# cluster: --gpu G --topology T --num-gpus N`) and what
// from-megatron must do with it (`# expect: converts`, `# expect: not
// simulated: FLAGS` or `# expect: refused: MESSAGE`).
struct LaunchLine {
  std::string name, arguments, expect;
  std::vector<std::string> cluster;
};

std::string header_field(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("# " + key + ": ")) return line.substr(key.size() + 4);
  return "";
}

std::vector<LaunchLine> launch_lines() {
  std::vector<LaunchLine> lines;
  for (const auto& entry : fs::directory_iterator(fs::path(SIMTRAIN_SOURCE_DIR) / "tests" / "data" / "megatron_lines")) {
    LaunchLine line{entry.path().stem().string(), fixtures::read_text(entry.path()), "", {}};
    line.expect = header_field(line.arguments, "expect");
    std::istringstream cluster(header_field(line.arguments, "cluster"));
    for (std::string word; cluster >> word;) line.cluster.push_back(word);
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end(), [](const LaunchLine& x, const LaunchLine& y) { return x.name < y.name; });
  return lines;
}

fixtures::CliResult convert(const LaunchLine& line, const std::vector<std::string>& more = {}) {
  std::vector<std::string> command = {"from-megatron", line.arguments};
  command.insert(command.end(), line.cluster.begin(), line.cluster.end());
  command.insert(command.end(), more.begin(), more.end());
  return fixtures::run_simtrain(command);
}

// Every line converts into a scenario that loads, or is refused with the exact
// message its header gives: the flags not simulated, or what is missing.
TEST(FromMegatronLaunchLines, EachConvertsOrIsRefusedAsItsHeaderSays) {
  const std::vector<LaunchLine> lines = launch_lines();
  ASSERT_EQ(lines.size(), 20u);
  int converted = 0;
  for (const LaunchLine& line : lines) {
    SCOPED_TRACE(line.name);
    ASSERT_EQ(line.cluster.size(), 6u) << "no '# cluster: --gpu G --topology T --num-gpus N' line";
    const fixtures::CliResult run = convert(line);
    const std::string prefix = "simtrain: the Megatron-LM arguments: ";
    if (line.expect == "converts") {
      ASSERT_EQ(run.code, 0) << run.err;
      EXPECT_NO_THROW(fixtures::scenario_from(json::parse(run.out)));
      ++converted;
    } else if (line.expect.starts_with("not simulated: ")) {
      EXPECT_EQ(run.code, 2);
      EXPECT_EQ(run.out, "");
      EXPECT_EQ(run.err, prefix + "flags that may change the step time and are not simulated: " +
                             line.expect.substr(15) + " (--ignore-unknown writes the scenario without them)\n");
    } else if (line.expect.starts_with("refused: ")) {
      EXPECT_EQ(run.code, 2);
      EXPECT_EQ(run.out, "");
      EXPECT_EQ(run.err, prefix + line.expect.substr(9) + "\n");
    } else {
      ADD_FAILURE() << "no '# expect: converts', '# expect: not simulated: ...' or '# expect: refused: ...' line";
    }
  }
  EXPECT_GE(converted, 15);
}

// A few lines' scenarios field by field: what their flags and cluster say.
TEST(FromMegatronLaunchLines, SmallLinesBecomeTheScenariosTheirFlagsSay) {
  const std::vector<LaunchLine> lines = launch_lines();
  const auto scenario_of = [&](const std::string& name) {
    const auto line = std::find_if(lines.begin(), lines.end(), [&](const LaunchLine& l) { return l.name == name; });
    EXPECT_NE(line, lines.end()) << name;
    const fixtures::CliResult run = convert(*line);
    EXPECT_EQ(run.code, 0) << run.err;
    return fixtures::scenario_from(json::parse(run.out));
  };
  struct Expected {
    std::string name;
    int tp, pp, dp, virtual_stages;
    int64_t micro, global, seq, layers, hidden;
    bool sequence_parallel;
  };
  const std::vector<Expected> expected = {
      {"megatron-lm-gpt-345m-1gpu", 1, 1, 1, 1, 4, 8, 1024, 24, 1024, false},
      {"megatron-lm-gpt-345m-tp2-pp2", 2, 2, 2, 1, 4, 16, 1024, 24, 1024, true},
      {"sc21-figure12-interleaved", 8, 12, 1, 4, 1, 12, 2048, 96, 12288, false},
      {"sc21-figure14-pp2-dp32", 1, 2, 32, 1, 1, 32, 2048, 32, 3840, false}};
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.name);
    const Scenario s = scenario_of(e.name);
    EXPECT_EQ(s.parallel.tensor, e.tp);
    EXPECT_EQ(s.parallel.pipeline, e.pp);
    EXPECT_EQ(s.parallel.data, e.dp);
    EXPECT_EQ(s.virtual_stages(), e.virtual_stages);
    EXPECT_EQ(s.parallel.sequence_parallel, e.sequence_parallel);
    EXPECT_EQ(s.training.micro_batch_size, e.micro);
    EXPECT_EQ(s.training.global_batch_size, e.global);
    EXPECT_EQ(s.training.seq_length, e.seq);
    EXPECT_EQ(s.model.num_layers, e.layers);
    EXPECT_EQ(s.model.hidden_size, e.hidden);
  }
}

// The flags of from-megatron's `ignored (no effect on step time): ...` line.
std::vector<std::string> ignored_flags(const std::string& err) {
  const std::string heading = "ignored (no effect on step time): ";
  const size_t start = err.find(heading);
  if (start == std::string::npos) return {};
  std::istringstream list(err.substr(start + heading.size(), err.find('\n', start) - start - heading.size()));
  std::vector<std::string> flags;
  for (std::string flag; std::getline(list >> std::ws, flag, ',');) flags.push_back(flag);
  return flags;
}

// What each rule of a flag that depends on its value (or on the flags beside
// it) decides: ignored where it changes nothing, named where it changes what
// is not simulated.
TEST(FromMegatron, FlagsThatChangeNothingAtSomeValuesAreIgnoredThere) {
  const std::string base = "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                           "--vocab-size 1024 --global-batch-size 16 ";
  struct Case {
    std::string flags;
    bool ignored;
  };
  const std::vector<std::pair<std::string, std::vector<Case>>> cases = {
      {"--transformer-impl", {{"--bf16 --transformer-impl transformer_engine", true},
                              {"--bf16 --transformer-impl local", false}}},
      {"--optimizer", {{"--bf16 --optimizer adam", true}, {"--bf16 --optimizer sgd", false}}},
      {"--clip-grad", {{"--bf16 --clip-grad 1.0", true}, {"--bf16 --clip-grad 0.0", false}}},
      {"--moe-router-load-balancing-type", {{"--bf16 --num-experts 8 --moe-router-load-balancing-type aux_loss", true},
                                            {"--bf16 --num-experts 8 --moe-router-load-balancing-type sinkhorn", false}}},
      {"--accumulate-allreduce-grads-in-fp32", {{"--bf16 --accumulate-allreduce-grads-in-fp32", true},
                                                {"--fp16 --accumulate-allreduce-grads-in-fp32", false}}},
      {"--no-position-embedding", {{"--bf16 --position-embedding-type rope --no-position-embedding", true},
                                   {"--bf16 --no-position-embedding", false}}},
      {"--log-num-zeros-in-grad", {{"--bf16 --log-num-zeros-in-grad", false}}},
      {"--log-params-norm", {{"--bf16 --log-params-norm", false}}},
      {"--log-interval", {{"--bf16 --log-interval 10", true}}}};
  for (const auto& [flag, flag_cases] : cases)
    for (const Case& c : flag_cases) {
      SCOPED_TRACE(c.flags);
      const Converted run = from_megatron(base + c.flags, "H100-SXM", "dgx-h100-superpod", 8);
      if (c.ignored) {
        EXPECT_EQ(run.result.code, 0) << run.result.err;
        EXPECT_THAT(ignored_flags(run.result.err), Contains(flag));
      } else {
        EXPECT_EQ(run.result.code, 2);
        EXPECT_EQ(run.result.err, "simtrain: the Megatron-LM arguments: flags that may change the step time and are "
                                  "not simulated: " + flag + " (--ignore-unknown writes the scenario without them)\n");
      }
    }
}

// The line of issue 39: `--transformer-impl transformer_engine` (Megatron-LM's
// default) after from-megatron's `--`, which is no flag of the line.
TEST(FromMegatron, TransformerEngineAfterTheEndOfOptionsConverts) {
  const auto run = fixtures::run_simtrain({"from-megatron", "--gpu", "H100-SXM", "--topology", "dgx-h100-superpod",
                                           "--num-gpus", "8", "--", "--transformer-impl", "transformer_engine",
                                           "--num-layers", "2", "--hidden-size", "256", "--num-attention-heads", "4",
                                           "--seq-length", "128", "--vocab-size", "1024", "--bf16",
                                           "--global-batch-size", "8"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "ignored (no effect on step time): --transformer-impl\n");
  EXPECT_EQ(json::parse(run.out)["description"],
            "From the Megatron-LM arguments: --transformer-impl transformer_engine --num-layers 2 --hidden-size 256 "
            "--num-attention-heads 4 --seq-length 128 --vocab-size 1024 --bf16 --global-batch-size 8");
}

// A line refused for what it lacks also names what it sets that is not
// simulated, so that one try says everything to change.
TEST(FromMegatron, ARefusalAlsoNamesTheFlagsNotSimulated) {
  const Converted run = from_megatron("--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                                      "--bf16 --tokenizer-type HuggingFaceTokenizer --manual-gc --clip-grad 0",
                                      "H100-SXM", "dgx-h100-superpod", 8);
  EXPECT_EQ(run.result.code, 2);
  EXPECT_EQ(run.result.err,
            "simtrain: the Megatron-LM arguments: --vocab-size: missing: the vocabulary of tokenizer "
            "HuggingFaceTokenizer is not in the arguments; add --vocab-size N (its vocabulary); not simulated either: "
            "--manual-gc, --clip-grad\n");
}

// Routed experts run as grouped GEMMs; without --moe-grouped-gemm Megatron-LM
// runs them one by one, which is said.
TEST(FromMegatron, ExpertsWithoutGroupedGemmAreSaidToBeSimulatedGrouped) {
  const Converted sequential = small_model("--num-experts 8 --global-batch-size 16");
  ASSERT_EQ(sequential.result.code, 0) << sequential.result.err;
  EXPECT_THAT(sequential.result.err,
              HasSubstr("assumed: the routed experts' GEMMs timed as one grouped GEMM (without --moe-grouped-gemm "
                        "Megatron-LM runs one expert after another: its launches are counted so, its GEMMs' time is "
                        "not)\n"));
  const Converted grouped = small_model("--num-experts 8 --global-batch-size 16 --moe-grouped-gemm --moe-permute-fusion");
  ASSERT_EQ(grouped.result.code, 0) << grouped.result.err;
  EXPECT_THAT(grouped.result.err, Not(HasSubstr("timed as one grouped GEMM")));
  for (const std::string section : {"model", "training", "parallelism"})
    EXPECT_EQ(grouped.scenario[section], sequential.scenario[section]) << section;
}

}  // namespace
}  // namespace simtrain
