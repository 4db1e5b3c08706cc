// Blackwell's block-scaled training precisions, as Transformer Engine runs
// them (sim/model/quantization.hpp): mxfp8 (E4M3 data, one E8M0 scale byte
// per 32 elements) and nvfp4 (E2M1 data at half a byte, one E4M3 scale byte
// per 16 elements, a per-tensor amax kernel before each cast). Each op's
// bytes and each pass's kernels against the formats by hand; what the
// scenario and Megatron's flags accept and refuse; a B200 step in mxfp8.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/engine/simulate.hpp"
#include "sim/model/quantization.hpp"
#include "sim/model/workload.hpp"
#include "sim/scenario/megatron_arguments.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using nlohmann::json;
using testing::HasSubstr;

// Llama 3 8B's layer on `gpus` GPUs at TP 2 with sequence parallelism
// (`layers` layers, 4096 tokens a micro-batch).
json llama(const std::string& gpu, const std::string& topology, const std::string& dtype, int layers = 2,
           int gpus = 2) {
  json training = {{"seq_length", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 8 * gpus / 2},
                   {"dtype", dtype}};
  return {{"name", "block-scaling"},
          {"model",
           {{"hidden_size", 4096},
            {"num_hidden_layers", layers},
            {"num_attention_heads", 32},
            {"num_key_value_heads", 8},
            {"intermediate_size", 14336},
            {"vocab_size", 128256},
            {"max_position_embeddings", 8192},
            {"hidden_act", "silu"},
            {"norm", "rmsnorm"},
            {"linear_bias", false},
            {"position_embedding", "rotary"}}},
          {"training", training},
          {"parallelism", {{"tensor_model_parallel_size", 2}, {"sequence_parallel", true}}},
          {"cluster", {{"gpu", gpu}, {"num_gpus", gpus}, {"topology", topology}}}};
}

json on_b200(const std::string& dtype, const std::string& fp8_recipe = "") {
  json document = llama("B200", "dgx-b200-superpod", dtype);
  if (!fp8_recipe.empty()) document["training"]["fp8_recipe"] = fp8_recipe;
  return document;
}

Workload workload_of(const json& document) { return build_workload(fixtures::scenario_from(document)); }

using fixtures::op_named;

bool has_op(const Pass& pass, const std::string& name) {
  return std::any_of(pass.ops.begin(), pass.ops.end(), [&](const Op& op) { return op.name == name; });
}

// The layer's shapes on one TP rank (t = 2): tokens a micro-batch, hidden,
// the qkv and fc1 widths, proj's input width, the MLP's width.
constexpr double tokens = 4096, h = 4096, t = 2, qkv = (32 + 2 * 8) * 128 / t, q = 32 * 128 / t, ffn = 14336 / t;
constexpr double e = 2;                               // bf16
constexpr double mxfp8_copy = 1 + 1.0 / 32;           // E4M3 byte + an E8M0 scale byte per 32
constexpr double nvfp4_copy = 0.5 + 1.0 / 16;         // E2M1 half byte + an E4M3 scale byte per 16

TEST(BlockScaling, EachRecipeSaysWhatOneQuantizedCopyCosts) {
  TrainingConfig training;
  training.dtype = Dtype::fp8;
  for (const auto& [recipe, copy, norm_quantizes] :
       {std::tuple{Fp8Recipe::delayed, 1.0, true}, {Fp8Recipe::tensorwise, 1.0, false}, {Fp8Recipe::mxfp8, mxfp8_copy, false}}) {
    training.fp8_recipe = recipe;
    const LinearQuantization q = linear_quantization(training);
    EXPECT_EQ(q.gemm_dtype, Dtype::fp8);
    EXPECT_DOUBLE_EQ(q.copy_bytes_per_element(), copy) << to_string(recipe);
    EXPECT_EQ(q.norm_quantizes, norm_quantizes) << to_string(recipe);
  }
  training.dtype = Dtype::fp4;
  EXPECT_EQ(linear_quantization(training).gemm_dtype, Dtype::fp4);
  EXPECT_DOUBLE_EQ(linear_quantization(training).copy_bytes_per_element(), nvfp4_copy);
  training.dtype = Dtype::bf16;
  EXPECT_FALSE(linear_quantization(training).quantized());
}

// One cast kernel per tensor, reading bf16 and writing the row-wise and the
// column-wise copy with their scales; no amax pass, no transposes (the norm
// writes bf16 and the cast reads it, as TE's unfused MXFP8 norm does).
TEST(BlockScaling, Mxfp8CastsEachLinearOperandOnceIntoBothCopiesWithScales) {
  const Workload bf16 = workload_of(on_b200("bf16"));
  const Workload mx = workload_of(on_b200("fp8", "mxfp8"));
  const Pass& forward = mx.layer.forward;
  EXPECT_DOUBLE_EQ(op_named(forward, "ln1").bytes, tokens / t * h * (e + e));
  EXPECT_DOUBLE_EQ(op_named(forward, "qkv_input_cast").bytes, tokens * h * (e + 2 * mxfp8_copy));
  EXPECT_DOUBLE_EQ(op_named(forward, "proj_input_cast").bytes, tokens * q * (e + 2 * mxfp8_copy));
  EXPECT_DOUBLE_EQ(op_named(forward, "fc2_input_cast").bytes, tokens * ffn * (e + 2 * mxfp8_copy));
  EXPECT_DOUBLE_EQ(op_named(forward, "qkv").bytes, (tokens * h + h * qkv) * mxfp8_copy + tokens * qkv * e);
  EXPECT_DOUBLE_EQ(op_named(mx.layer.backward_input, "fc1_grad_cast").bytes, tokens * 2 * ffn * (e + 2 * mxfp8_copy));
  EXPECT_DOUBLE_EQ(op_named(mx.layer.backward_input, "fc1_dgrad").bytes,
                   (tokens * 2 * ffn + 2 * ffn * h) * mxfp8_copy + tokens * h * e);
  EXPECT_DOUBLE_EQ(op_named(mx.layer.backward_weight, "fc2_wgrad").bytes,
                   (ffn * tokens + tokens * h) * mxfp8_copy + ffn * h * e);
  // Kernels: one cast per linear input (qkv, proj, fc1, fc2) and per output gradient.
  EXPECT_EQ(forward.ops.size(), bf16.layer.forward.ops.size() + 4);
  EXPECT_EQ(mx.layer.backward_input.ops.size(), bf16.layer.backward_input.ops.size() + 4);
  EXPECT_EQ(mx.layer.backward_weight.ops.size(), bf16.layer.backward_weight.ops.size());
  EXPECT_FALSE(has_op(mx.layer.backward_weight, "qkv_input_transpose"));
  for (const Op& op : forward.ops) EXPECT_EQ(op.name.find("_amax"), std::string::npos) << op.name;
  // The linears' GEMMs at the fp8 peak, everything else in bf16; FLOPs unchanged.
  for (const std::string name : {"qkv", "proj", "fc1", "fc2"})
    EXPECT_EQ(op_dtype(op_named(forward, name), Dtype::fp8), Dtype::fp8) << name;
  EXPECT_EQ(op_dtype(op_named(mx.layer.backward_weight, "qkv_wgrad"), Dtype::fp8), Dtype::fp8);
  EXPECT_EQ(op_dtype(op_named(forward, "attn"), Dtype::fp8), Dtype::bf16);
  EXPECT_EQ(op_dtype(op_named(mx.head.forward, "logits"), Dtype::fp8), Dtype::bf16);
  EXPECT_DOUBLE_EQ(mx.layer.forward.flops(), bf16.layer.forward.flops());
  // Sequence parallelism gathers the quantized input with its scales; reductions stay bf16.
  for (const TpCollectives& c : forward.tp)
    EXPECT_DOUBLE_EQ(c.bytes, tokens * h * (c.kind == TaskKind::ALLGATHER ? mxfp8_copy : e));
  // The weight gradient keeps the column-wise copy of each input.
  const Workload delayed = workload_of(on_b200("fp8", "delayed"));
  EXPECT_DOUBLE_EQ(mx.layer.weight_grad_activation_bytes, delayed.layer.weight_grad_activation_bytes * mxfp8_copy);
  // The weights, once a step: one kernel.
  const std::vector<Op> weights = weight_cast_ops(linear_quantization(fixtures::scenario_from(on_b200("fp8", "mxfp8")).training), 1e9);
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_EQ(weights[0].name, "fp8_weight_cast");
  EXPECT_DOUBLE_EQ(weights[0].bytes, 1e9 * (e + 2 * mxfp8_copy));
}

// Two kernels per tensor: the amax (of the tensor and of its Hadamard
// transform) reading it once, then the cast writing both fp4 copies with
// their E4M3 scales (the column-wise one transformed, for the weight gradient).
TEST(BlockScaling, Nvfp4RunsAnAmaxKernelThenOneCastPerLinearOperand) {
  const Workload bf16 = workload_of(on_b200("bf16"));
  const Workload fp4 = workload_of(on_b200("fp4"));
  const Pass& forward = fp4.layer.forward;
  EXPECT_DOUBLE_EQ(op_named(forward, "qkv_input_cast_amax").bytes, tokens * h * e);
  EXPECT_DOUBLE_EQ(op_named(forward, "qkv_input_cast").bytes, tokens * h * (e + 2 * nvfp4_copy));
  EXPECT_DOUBLE_EQ(op_named(fp4.layer.backward_input, "proj_grad_cast_amax").bytes, tokens * h * e);
  EXPECT_DOUBLE_EQ(op_named(fp4.layer.backward_input, "proj_grad_cast").bytes, tokens * h * (e + 2 * nvfp4_copy));
  EXPECT_DOUBLE_EQ(op_named(forward, "fc1").bytes, (tokens * h + h * 2 * ffn) * nvfp4_copy + tokens * 2 * ffn * e);
  EXPECT_EQ(forward.ops.size(), bf16.layer.forward.ops.size() + 8);
  EXPECT_EQ(fp4.layer.backward_input.ops.size(), bf16.layer.backward_input.ops.size() + 8);
  EXPECT_EQ(fp4.layer.backward_weight.ops.size(), bf16.layer.backward_weight.ops.size());
  for (const std::string name : {"qkv", "fc2"}) EXPECT_EQ(op_dtype(op_named(forward, name), Dtype::fp4), Dtype::fp4);
  EXPECT_EQ(op_dtype(op_named(fp4.layer.backward_input, "fc2_dgrad"), Dtype::fp4), Dtype::fp4);
  EXPECT_EQ(op_dtype(op_named(fp4.layer.backward_weight, "fc2_wgrad"), Dtype::fp4), Dtype::fp4);
  EXPECT_EQ(op_dtype(op_named(forward, "attn"), Dtype::fp4), Dtype::bf16);
  EXPECT_EQ(op_dtype(op_named(fp4.head.forward, "logits"), Dtype::fp4), Dtype::bf16);
  for (const TpCollectives& c : forward.tp)
    EXPECT_DOUBLE_EQ(c.bytes, tokens * h * (c.kind == TaskKind::ALLGATHER ? nvfp4_copy : e));
  const Workload delayed = workload_of(on_b200("fp8", "delayed"));
  EXPECT_DOUBLE_EQ(fp4.layer.weight_grad_activation_bytes, delayed.layer.weight_grad_activation_bytes * nvfp4_copy);
  EXPECT_DOUBLE_EQ(fp4.layer.low_precision_weights, delayed.layer.low_precision_weights);
  const std::vector<Op> weights = weight_cast_ops(linear_quantization(fixtures::scenario_from(on_b200("fp4")).training), 1e9);
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0].name, "fp4_weight_cast_amax");
  EXPECT_DOUBLE_EQ(weights[0].bytes, 1e9 * e);
  EXPECT_DOUBLE_EQ(weights[1].bytes, 1e9 * (e + 2 * nvfp4_copy));
}

TEST(BlockScaling, BlackwellStatesItsFp4Peak) {
  EXPECT_DOUBLE_EQ(builtin_gpu("B200")->peak_fp4_flops, 2 * builtin_gpu("B200")->peak_fp8_flops);
  EXPECT_DOUBLE_EQ(builtin_gpu("GB200")->peak_fp4_flops, 10000e12);
  for (const std::string name : {"A100-80GB", "H100-SXM", "H200", "H800", "MI300X"})
    EXPECT_EQ(builtin_gpu(name)->peak_fp4_flops, 0) << name;
  json custom = {{"peak_bf16_tflops", 100}, {"peak_fp4_tflops", 400}, {"hbm_GBps", 1000}, {"memory_GiB", 80},
                 {"sm_count", 100}, {"tensor_clock_MHz", 1000}, {"sustained_tensor_clock_MHz", 1000}};
  EXPECT_DOUBLE_EQ(gpu_from_json(custom, "test.json", "cluster.gpu").peak_fp4_flops, 400e12);
}

TEST(BlockScaling, GpusWithoutBlockScaledTensorCoresRefuseMxfp8AndFp4) {
  json mx = llama("H100-SXM", "dgx-h100-superpod", "fp8");
  mx["training"]["fp8_recipe"] = "mxfp8";
  EXPECT_EQ(fixtures::scenario_error(mx),
            "test.json: training.fp8_recipe: mxfp8 needs block-scaled tensor cores, which GPU H100-SXM lacks (no fp4 "
            "peak: peak_fp4_tflops); delayed or tensorwise scaling runs there");
  EXPECT_EQ(fixtures::scenario_error(llama("H200", "dgx-h100-superpod", "fp4")),
            "test.json: training.dtype: fp4 (NVFP4) needs block-scaled tensor cores, which GPU H200 lacks (no fp4 "
            "peak: peak_fp4_tflops)");
  json recipe_without_fp4 = on_b200("fp8");
  recipe_without_fp4["training"]["fp4_recipe"] = "nvfp4";
  EXPECT_EQ(fixtures::scenario_error(recipe_without_fp4),
            "test.json: training.fp4_recipe: is for fp4 training (training.dtype \"fp4\"), got dtype fp8");
  json fp8_recipe_in_fp4 = on_b200("fp4", "mxfp8");
  EXPECT_EQ(fixtures::scenario_error(fp8_recipe_in_fp4),
            "test.json: training.fp8_recipe: is for fp8 training (training.dtype \"fp8\"), got dtype fp4");
  json fp4 = on_b200("fp4");
  fp4["training"]["fp4_recipe"] = "nvfp4";
  EXPECT_EQ(fixtures::scenario_error(fp4), "no error");
}

MegatronScenario from_megatron(const std::vector<std::string>& precision) {
  std::vector<std::string> words = {"--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "4",
                                    "--seq-length", "128", "--vocab-size", "1024", "--bf16"};
  words.insert(words.end(), precision.begin(), precision.end());
  return megatron_scenario(words, {"B200", "dgx-b200-superpod", 8}, "launch.sh");
}

TEST(BlockScaling, MegatronFlagsMapToTheRecipes) {
  EXPECT_EQ(from_megatron({"--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"}).document["training"]["fp8_recipe"],
            "mxfp8");
  const json fp4 = from_megatron({"--fp4-format", "e2m1", "--fp4-recipe", "nvfp4"}).document["training"];
  EXPECT_EQ(fp4["dtype"], "fp4");
  EXPECT_EQ(fp4["fp4_recipe"], "nvfp4");
  EXPECT_EQ(from_megatron({"--fp4-format", "e2m1"}).document["training"]["dtype"], "fp4");
  const auto refusal = [](const std::vector<std::string>& precision) {
    return fixtures::input_error_of([&] { from_megatron(precision); });
  };
  EXPECT_THAT(refusal({"--fp8-format", "e4m3", "--fp4-format", "e2m1"}),
              HasSubstr("--fp4-format e2m1: --fp8-format given too: Megatron-LM takes one"));
  EXPECT_THAT(refusal({"--fp4-format", "e2m1", "--fp4-recipe", "custom"}), HasSubstr("--fp4-recipe custom: only nvfp4 is simulated"));
  EXPECT_THAT(refusal({"--fp4-recipe", "nvfp4"}), HasSubstr("--fp4-recipe nvfp4: is for fp4 training: --fp4-format missing"));
  EXPECT_THAT(refusal({"--fp8-format", "e4m3", "--fp8-recipe", "blockwise"}),
              HasSubstr("--fp8-recipe blockwise: only delayed, tensorwise and mxfp8 scaling are simulated"));
}

// Llama 3 8B (8 layers) on 8 B200 at TP 2: the linears' GEMMs run at twice
// bf16's peak in mxfp8, but the casts, attention, norms and communication
// do not speed up, so the step is faster than bf16's, by less than 2x.
TEST(BlockScaling, AB200StepInMxfp8IsFasterThanBf16ByLessThanTwice) {
  const auto step_seconds = [](const std::string& dtype, const std::string& recipe) {
    json document = llama("B200", "dgx-b200-superpod", dtype, 8, 8);
    if (!recipe.empty()) document["training"]["fp8_recipe"] = recipe;
    const Simulation sim = simulate(fixtures::scenario_from(document));
    EXPECT_FALSE(sim.report.stopped);
    return sim.report.step_seconds;
  };
  const double bf16 = step_seconds("bf16", ""), mxfp8 = step_seconds("fp8", "mxfp8");
  EXPECT_LT(mxfp8, bf16);
  EXPECT_GT(mxfp8, bf16 / 2);
  // Its casts write scales and both copies: slower than delayed scaling's.
  EXPECT_GT(mxfp8, step_seconds("fp8", "delayed"));
}

}  // namespace
}  // namespace simtrain
