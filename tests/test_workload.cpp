#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/input_error.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/quantization.hpp"
#include "sim/model/workload.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

nlohmann::json validation(const std::string& file) {
  std::ifstream in(std::string(SIMTRAIN_VALIDATION_DIR) + "/" + file);
  return nlohmann::json::parse(in);
}

// GPT as in Megatron-LM SC'21: LayerNorm, biases, GELU with f = 4h, learned
// positions, tied embeddings, full recompute, unfused attention.
Scenario gpt(int64_t hidden, int64_t layers, int64_t heads, int64_t tp, int64_t global_batch) {
  Scenario scenario;
  scenario.model = {.name = "gpt",
                    .hidden_size = hidden,
                    .num_layers = layers,
                    .num_attention_heads = heads,
                    .num_key_value_heads = heads,
                    .head_dim = hidden / heads,
                    .intermediate_size = 4 * hidden,
                    .vocab_size = 51200,
                    .max_position_embeddings = 2048};
  scenario.training = {.seq_length = 2048,
                       .micro_batch_size = 2,
                       .global_batch_size = global_batch,
                       .recompute = Recompute::full,
                       .flash_attention = false};
  scenario.parallel.tensor = tp;
  return scenario;
}

Scenario gpt_row(const nlohmann::json& row) {
  return gpt(row["hidden_size"], row["num_layers"], row["heads"], row["tp"], row["global_batch"]);
}

Scenario llama(int64_t kv_heads, int64_t ffn, int64_t vocab) {
  Scenario scenario;
  scenario.model = {.name = "llama",
                    .hidden_size = 4096,
                    .num_layers = 32,
                    .num_attention_heads = 32,
                    .num_key_value_heads = kv_heads,
                    .head_dim = 128,
                    .intermediate_size = ffn,
                    .vocab_size = vocab,
                    .max_position_embeddings = 4096,
                    .gated_mlp = true,
                    .rms_norm = true,
                    .linear_bias = false,
                    .learned_position_embeddings = false,
                    .tie_word_embeddings = false};
  scenario.training = {.seq_length = 4096, .micro_batch_size = 1, .global_batch_size = 64};
  return scenario;
}

Scenario llama2_7b() { return llama(32, 11008, 32000); }
Scenario llama3_8b() { return llama(8, 14336, 128256); }

void expect_relative(double actual, double expected, double tolerance) {
  EXPECT_NEAR(actual / expected, 1.0, tolerance) << actual << " vs " << expected;
}

TEST(Workload, MegatronParameterCount) {
  const nlohmann::json table = validation("megatron_sc21.json");  // outlives the loop, unlike a temporary's rows
  for (const auto& row : table["rows"]) {
    const Scenario scenario = gpt_row(row);
    const double h = row["hidden_size"], l = row["num_layers"], V = 51200, s = 2048;
    const double megatron = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    const double params = build_workload(scenario).total_parameters;
    expect_relative(params, megatron + 2 * h, 1e-12);  // + the final LayerNorm
    EXPECT_DOUBLE_EQ(std::round(params / 1e8) / 10, row["params_B"].get<double>());
  }
}

TEST(Workload, MegatronFlopsPerStep) {
  const nlohmann::json table = validation("megatron_sc21.json");
  for (const auto& row : table["rows"]) {
    const Workload workload = build_workload(gpt_row(row));
    const double B = row["global_batch"], h = row["hidden_size"], l = row["num_layers"], V = 51200, s = 2048;
    // SC'21 with full recompute; Korthikanti et al. 2022 without (model FLOPs).
    expect_relative(workload.hardware_flops_per_step,
                    96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)), 1e-9);
    expect_relative(workload.model_flops_per_step, 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)),
                    1e-9);
    // Without the logits, the model FLOPs are 3/4 of the executed ones.
    const double logits = 6 * B * s * V * h;
    expect_relative(workload.model_flops_per_step - logits, 0.75 * (workload.hardware_flops_per_step - logits),
                    1e-9);
    EXPECT_DOUBLE_EQ(workload.tokens_per_step, B * s);
  }
}

TEST(Workload, FlopsDoNotDependOnMicroBatchSize) {
  Scenario scenario = gpt(6144, 40, 48, 8, 1024);
  const double flops = build_workload(scenario).hardware_flops_per_step;
  scenario.training.micro_batch_size = 8;
  expect_relative(build_workload(scenario).hardware_flops_per_step, flops, 1e-12);
}

// Korthikanti et al. 2022, equations 2, 4 and 6.
TEST(Workload, KorthikantiActivationMemory) {
  auto rows = validation("megatron_sc21.json")["rows"];
  rows.push_back(validation("korthikanti_2022.json")["rows"][1]);  // 175B, tp 8
  for (const auto& row : rows) {
    Scenario scenario = gpt(row["hidden_size"], row["num_layers"], row["heads"], row.value("tp", 8), 64);
    const double s = 2048, b = scenario.training.micro_batch_size, h = row["hidden_size"], a = row["heads"];
    const double t = scenario.parallel.tensor, sbh = s * b * h;
    const auto activation = [&](Recompute recompute, bool sequence_parallel) {
      scenario.training.recompute = recompute;
      scenario.parallel.sequence_parallel = sequence_parallel;
      return build_workload(scenario).layer.activation_bytes;
    };
    expect_relative(activation(Recompute::none, false), sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1e-12);
    expect_relative(activation(Recompute::none, true), sbh * (34 / t + 5 * a * s / (h * t)), 1e-12);
    expect_relative(activation(Recompute::selective, false), sbh * (10 + 24 / t), 1e-12);
    expect_relative(activation(Recompute::selective, true), sbh * 34 / t, 1e-12);
    expect_relative(activation(Recompute::full, false), 2 * sbh, 1e-12);
    expect_relative(activation(Recompute::full, true), 2 * sbh / t, 1e-12);
    // Flash attention stores no s² scores either.
    scenario.training.flash_attention = true;
    expect_relative(activation(Recompute::none, true), sbh * 34 / t, 1e-12);
  }
}

TEST(Workload, WeightGradActivationsAreTheLinearInputs) {
  Scenario scenario = gpt(12288, 96, 96, 8, 64);
  const double sbh = 2048.0 * 2 * 12288;
  // qkv and fc1 inputs (2sbh each, TP-replicated), proj (2sbh/t) and fc2 (8sbh/t) inputs.
  for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
    scenario.training.recompute = recompute;
    expect_relative(build_workload(scenario).layer.weight_grad_activation_bytes, sbh * (4 + 10.0 / 8), 1e-12);
  }
  scenario.parallel.sequence_parallel = true;
  expect_relative(build_workload(scenario).layer.weight_grad_activation_bytes, sbh * 14 / 8, 1e-12);
}

// fp8 training keeps each linear's input as the fp8 cast its GEMM read (one
// byte an element: half of the bf16 sbh(4 + 10/t)), and fused attention its
// own bf16 output (2sbh/t) for its backward, which proj no longer keeps.
TEST(Workload, Fp8KeepsTheLinearInputsAsTheirCasts) {
  Scenario scenario = gpt(12288, 96, 96, 8, 64);
  scenario.training.flash_attention = true;
  scenario.training.recompute = Recompute::none;
  scenario.training.dtype = Dtype::fp8;
  const double sbh = 2048.0 * 2 * 12288, t = 8;
  expect_relative(build_workload(scenario).layer.weight_grad_activation_bytes, sbh * (2 + 5 / t), 1e-12);
  // Korthikanti's sbh(10 + 24/t) without stored scores, less sbh(2 + 5/t), plus 2sbh/t.
  expect_relative(build_workload(scenario).layer.activation_bytes, sbh * (8 + 21 / t), 1e-12);
  scenario.training.flash_attention = false;  // the unfused backward reads the scores, not the output
  expect_relative(build_workload(scenario).layer.activation_bytes,
                  sbh * (8 + 19 / t + 5 * 96 * 2048 / (12288 * t)), 1e-12);

  // An MoE layer (Qwen3-30B-A3B: micro-batch 2 x 4096 tokens, 8 of 128 experts
  // a token, EP 8): the router keeps its bf16 input; qkv's and proj's inputs
  // and the 8 rows a token of the experts' (2048 + 768 wide) are halved.
  Scenario moe = load_scenario("qwen3-30b-a3b-16xh100");
  const double fp8_bytes = build_workload(moe).layer.activation_bytes;
  moe.training.dtype = Dtype::bf16;
  const double tokens = 8192, h = 2048, o = 32 * 128;
  expect_relative(build_workload(moe).layer.activation_bytes - fp8_bytes,
                  tokens * h + tokens * o + 8 * tokens * (h + 768) - 2 * tokens * o, 1e-12);
}

TEST(Workload, LlamaParameterCounts) {
  EXPECT_EQ(build_workload(llama2_7b()).total_parameters, 6'738'415'616.0);
  EXPECT_EQ(build_workload(llama3_8b()).total_parameters, 8'030'261'248.0);  // GQA
}

TEST(Workload, TensorParallelismConservesParametersAndFlops) {
  for (Scenario scenario : {llama3_8b(), gpt(6144, 40, 48, 1, 1024)}) {
    const Workload whole = build_workload(scenario);
    const double h = scenario.model.hidden_size;
    // Norms and the row-parallel (proj, fc2) biases are replicated on every TP rank.
    const double replicated = (scenario.model.rms_norm ? 2 : 4) * h + (scenario.model.linear_bias ? 2 * h : 0);
    for (int64_t tp : {1, 2, 4, 8}) {
      scenario.parallel.tensor = tp;
      const Workload sharded = build_workload(scenario);
      SCOPED_TRACE("tp " + std::to_string(tp));
      EXPECT_DOUBLE_EQ(sharded.layer.parameters * tp - (tp - 1) * replicated, whole.layer.parameters);
      EXPECT_DOUBLE_EQ(sharded.total_parameters, whole.total_parameters);
      for (auto pass : {&UnitWork::forward, &UnitWork::backward_input, &UnitWork::backward_weight}) {
        EXPECT_DOUBLE_EQ((sharded.layer.*pass).flops() * tp, (whole.layer.*pass).flops());
        EXPECT_DOUBLE_EQ((sharded.head.*pass).flops() * tp, (whole.head.*pass).flops());
      }
      EXPECT_DOUBLE_EQ(sharded.model_flops_per_step, whole.model_flops_per_step);
      EXPECT_DOUBLE_EQ(sharded.stage_boundary_bytes * tp, whole.stage_boundary_bytes);
    }
  }
}

// How many TP collectives of each kind a pass issues, overlapped ones apart; each of `bytes`.
// Reductions beside a weight-gradient GEMM apart too.
struct TpCounts {
  int allreduced = 0, gathered = 0, scattered = 0, gathered_overlapped = 0, scattered_overlapped = 0;
  int allreduced_beside_wgrad = 0, scattered_beside_wgrad = 0;
  bool operator==(const TpCounts&) const = default;
};

TpCounts tp_counts(const Pass& pass, double bytes) {
  TpCounts counts;
  for (const TpCollectives& c : pass.tp) {
    EXPECT_DOUBLE_EQ(c.bytes, bytes) << to_string(c.kind);
    EXPECT_TRUE(!c.overlapped || c.kind != TaskKind::ALLREDUCE);
    EXPECT_TRUE(!c.beside_weight_gradient || c.kind != TaskKind::ALLGATHER);
    const bool beside = c.beside_weight_gradient;
    int& scattered = c.overlapped ? counts.scattered_overlapped : counts.scattered;
    int& total = c.kind == TaskKind::ALLREDUCE       ? (beside ? counts.allreduced_beside_wgrad : counts.allreduced)
                 : c.kind == TaskKind::REDUCESCATTER ? (beside ? counts.scattered_beside_wgrad : scattered)
                 : c.overlapped                      ? counts.gathered_overlapped
                                                     : counts.gathered;
    total += c.count;
  }
  return counts;
}

// Per layer, forward: 2 all-reduces, or (SP) all-gathers before qkv and fc1
// and reduce-scatters after proj and fc2; backward: their conjugates (the
// qkv and fc1 input gradients reduced beside their weight-gradient GEMMs), and
// under SP the overlapped re-gathers of the qkv and fc1 inputs: 6.
TEST(Workload, SequenceParallelSplitsAllreducesAndRegathersForWeightGradients) {
  Scenario scenario = llama2_7b();
  EXPECT_TRUE(build_workload(scenario).layer.forward.tp.empty());  // tp 1
  scenario.parallel.tensor = 4;
  const double bytes = 1 * 4096 * 4096 * 2.0;
  scenario.parallel.sequence_parallel = false;
  const Workload plain = build_workload(scenario);
  EXPECT_EQ(tp_counts(plain.layer.forward, bytes), (TpCounts{.allreduced = 2}));
  // The input gradients of qkv and fc1, beside their weight-gradient GEMMs (Megatron's async TP all-reduce).
  EXPECT_EQ(tp_counts(plain.layer.backward_input, bytes), (TpCounts{.allreduced_beside_wgrad = 2}));
  EXPECT_TRUE(plain.layer.backward_weight.tp.empty());
  scenario.parallel.async_tp_allreduce = false;  // Megatron-LM before September 2021
  EXPECT_EQ(tp_counts(build_workload(scenario).layer.backward_input, bytes), (TpCounts{.allreduced = 2}));
  scenario.parallel.async_tp_allreduce = true;

  scenario.parallel.sequence_parallel = true;
  const Workload sp = build_workload(scenario);
  EXPECT_EQ(tp_counts(sp.layer.forward, bytes), (TpCounts{.gathered = 2, .scattered = 2}));
  EXPECT_EQ(tp_counts(sp.layer.backward_input, bytes),
            (TpCounts{.gathered = 2, .gathered_overlapped = 2, .scattered_beside_wgrad = 2}));
  EXPECT_TRUE(sp.layer.backward_weight.tp.empty());
  // The output layer is column-parallel too: its input is gathered again, its input gradient reduced beside its wgrad.
  EXPECT_EQ(tp_counts(sp.head.backward_input, bytes), (TpCounts{.gathered_overlapped = 1, .scattered_beside_wgrad = 1}));
}

// tp_comm_overlap (Transformer Engine's userbuffers): the layer's forward
// gathers (before qkv and fc1) and reduce-scatters (after proj and fc2) and
// its backward gathers of the proj and fc2 output gradients run beside the
// GEMMs; the same collectives, of the same sizes. The embedding's and the
// output layer's (Megatron's own linears) still block.
TEST(Workload, TpCommOverlapRunsTheLayersSequenceParallelCollectivesBesideTheGemms) {
  Scenario scenario = llama2_7b();
  scenario.parallel.tensor = 4;
  scenario.parallel.sequence_parallel = true;
  const Workload sp = build_workload(scenario);
  scenario.parallel.tp_comm_overlap = true;
  const Workload overlapped = build_workload(scenario);
  const double bytes = 1 * 4096 * 4096 * 2.0;
  EXPECT_EQ(tp_counts(overlapped.layer.forward, bytes),
            (TpCounts{.gathered_overlapped = 2, .scattered_overlapped = 2}));
  EXPECT_EQ(tp_counts(overlapped.layer.backward_input, bytes),
            (TpCounts{.gathered_overlapped = 4, .scattered_beside_wgrad = 2}));
  const auto collectives = [](const Pass& pass) {
    std::vector<std::tuple<TaskKind, int, double, bool, bool>> list;
    for (const TpCollectives& c : pass.tp)
      list.emplace_back(c.kind, c.count, c.bytes, c.overlapped, c.beside_weight_gradient);
    return list;
  };
  for (const auto unit : {&Workload::embedding, &Workload::head}) {
    EXPECT_FALSE(collectives((sp.*unit).forward).empty());
    for (const auto pass : {&UnitWork::forward, &UnitWork::backward_input, &UnitWork::backward_weight})
      EXPECT_EQ(collectives(overlapped.*unit.*pass), collectives(sp.*unit.*pass));
  }
}

using fixtures::op_named;

bool has_op(const Pass& pass, const std::string& name) {
  return std::any_of(pass.ops.begin(), pass.ops.end(), [&](const Op& op) { return op.name == name; });
}

// fp8 as Transformer Engine's default recipe: the linears' GEMM operands are
// fp8 (their outputs bf16), cast by memory-bound kernels; norms read bf16
// and write the linear's fp8 input; everything else, the output layer, TP
// reductions and pipeline messages stay bf16; SP's all-gathers are fp8.
// In fp8 training only the linears' GEMMs compute in fp8 (and are timed at
// the fp8 peak); the logits GEMM, unfused attention's GEMMs and every other
// op compute in bf16.
TEST(Workload, Fp8ComputesOnlyTheLinearsInFp8) {
  Scenario scenario = llama3_8b();
  scenario.training.dtype = Dtype::fp8;
  scenario.training.flash_attention = false;
  const Workload fp8 = build_workload(scenario);
  for (const std::string name : {"qkv", "proj", "fc1", "fc2"})
    EXPECT_EQ(op_dtype(op_named(fp8.layer.forward, name), Dtype::fp8), Dtype::fp8) << name;
  EXPECT_EQ(op_dtype(op_named(fp8.layer.backward_input, "fc1_dgrad"), Dtype::fp8), Dtype::fp8);
  EXPECT_EQ(op_dtype(op_named(fp8.layer.backward_weight, "qkv_wgrad"), Dtype::fp8), Dtype::fp8);
  for (const std::string name : {"attn_scores", "attn_context", "ln1", "swiglu"})
    EXPECT_EQ(op_dtype(op_named(fp8.layer.forward, name), Dtype::fp8), Dtype::bf16) << name;
  EXPECT_EQ(op_dtype(op_named(fp8.head.forward, "logits"), Dtype::fp8), Dtype::bf16);
  // bf16 and fp16 training compute everything in their own precision.
  scenario.training.dtype = Dtype::fp16;
  EXPECT_EQ(op_dtype(op_named(build_workload(scenario).layer.forward, "qkv"), Dtype::fp16), Dtype::fp16);
}

TEST(Workload, Fp8CastsOnlyTheLinearGemmInputs) {
  Scenario scenario = llama3_8b();
  scenario.parallel.tensor = 2;
  scenario.parallel.sequence_parallel = true;
  const Workload bf16 = build_workload(scenario);
  scenario.training.dtype = Dtype::fp8;
  const Workload fp8 = build_workload(scenario);
  const double tokens = 4096, h = 4096, t = 2, qkv = (32 + 2 * 8) * 128 / t, ffn = 14336 / t, q = 32 * 128 / t;

  const Pass& forward = fp8.layer.forward;
  EXPECT_DOUBLE_EQ(op_named(forward, "qkv").bytes, (tokens * h + h * qkv) * 1 + tokens * qkv * 2);
  EXPECT_DOUBLE_EQ(op_named(forward, "fc2").bytes, (tokens * ffn + ffn * h) * 1 + tokens * h * 2);
  EXPECT_DOUBLE_EQ(op_named(forward, "ln1").bytes, tokens / t * h * (2 + 1));
  EXPECT_DOUBLE_EQ(op_named(bf16.layer.forward, "ln1").bytes, tokens / t * h * (2 + 2));
  EXPECT_FALSE(has_op(forward, "qkv_input_cast"));  // the norm quantizes it
  // Read bf16, write fp8 and its transpose.
  EXPECT_DOUBLE_EQ(op_named(forward, "proj_input_cast").bytes, tokens * q * (2 + 2));
  EXPECT_DOUBLE_EQ(op_named(forward, "fc2_input_cast").bytes, tokens * ffn * (2 + 2));
  for (const std::string name : {"attn", "swiglu", "bias_dropout_add"})
    EXPECT_DOUBLE_EQ(op_named(forward, name).bytes, op_named(bf16.layer.forward, name).bytes) << name;
  EXPECT_DOUBLE_EQ(op_named(fp8.layer.backward_input, "ln1_grad").bytes, tokens / t * h * 3 * 2);  // x, dy, dx
  EXPECT_DOUBLE_EQ(op_named(fp8.layer.backward_input, "fc1_grad_cast").bytes, tokens * 2 * ffn * (2 + 2));
  EXPECT_DOUBLE_EQ(op_named(fp8.layer.backward_input, "fc1_dgrad").bytes,
                   (tokens * 2 * ffn + 2 * ffn * h) * 1 + tokens * h * 2);
  EXPECT_DOUBLE_EQ(op_named(fp8.layer.backward_weight, "qkv_input_transpose").bytes, tokens * h * 2);
  for (auto pass : {&UnitWork::forward, &UnitWork::backward_input, &UnitWork::backward_weight})
    EXPECT_DOUBLE_EQ((fp8.layer.*pass).flops(), (bf16.layer.*pass).flops());
  // The output layer and the embedding are bf16.
  EXPECT_DOUBLE_EQ(op_named(fp8.head.forward, "logits").bytes, op_named(bf16.head.forward, "logits").bytes);
  EXPECT_DOUBLE_EQ(op_named(fp8.head.forward, "final_norm").bytes, tokens / t * h * (2 + 2));
  EXPECT_DOUBLE_EQ(fp8.embedding.forward.bytes(), bf16.embedding.forward.bytes());
  EXPECT_DOUBLE_EQ(fp8.stage_boundary_bytes, bf16.stage_boundary_bytes);
  // Reduce-scatters carry bf16; TE all-gathers the quantized tensors.
  for (auto pass : {&UnitWork::forward, &UnitWork::backward_input})
    for (size_t c = 0; c < (fp8.layer.*pass).tp.size(); ++c) {
      const TpCollectives& collective = (fp8.layer.*pass).tp[c];
      const double bf16_bytes = (bf16.layer.*pass).tp[c].bytes;
      EXPECT_DOUBLE_EQ(bf16_bytes, tokens * h * 2);
      EXPECT_DOUBLE_EQ(collective.bytes, collective.kind == TaskKind::ALLGATHER ? bf16_bytes / 2 : bf16_bytes);
    }
  EXPECT_DOUBLE_EQ(fp8.head.backward_input.tp[0].bytes, bf16.head.backward_input.tp[0].bytes);
  // Without SP the all-reduces are bf16.
  scenario.parallel.sequence_parallel = false;
  for (const TpCollectives& c : build_workload(scenario).layer.forward.tp) EXPECT_DOUBLE_EQ(c.bytes, tokens * h * 2);
  // The weights are cast once a step.
  EXPECT_DOUBLE_EQ(fp8.layer.low_precision_weights, h * qkv + q * h + h * 2 * ffn + ffn * h);
  EXPECT_EQ(bf16.layer.low_precision_weights, 0);
  const std::vector<Op> weight_casts = weight_cast_ops(linear_quantization(scenario.training), 1e9);
  ASSERT_EQ(weight_casts.size(), 1u);
  EXPECT_DOUBLE_EQ(weight_casts[0].bytes, 4e9);
}

TEST(Workload, GradientsReducedInBf16HalveTheirBytes) {
  Scenario scenario = llama3_8b();
  EXPECT_EQ(build_workload(scenario).grad_bytes_per_parameter, 4);
  scenario.parallel.grad_reduce_in_bf16 = true;
  EXPECT_EQ(build_workload(scenario).grad_bytes_per_parameter, 2);
}

TEST(Workload, RecomputePasses) {
  Scenario scenario = gpt(2304, 24, 24, 2, 512);
  scenario.training.recompute = Recompute::none;
  EXPECT_TRUE(build_workload(scenario).layer.recompute.ops.empty());

  scenario.training.recompute = Recompute::selective;
  std::vector<std::string> names;
  for (const Op& op : build_workload(scenario).layer.recompute.ops) names.push_back(op.name);
  EXPECT_EQ(names, (std::vector<std::string>{"attn_scores", "softmax", "attn_dropout", "attn_context"}));

  scenario.training.flash_attention = true;
  const Workload flash = build_workload(scenario);
  ASSERT_EQ(flash.layer.recompute.ops.size(), 1u);
  EXPECT_EQ(flash.layer.recompute.ops[0].op_class, OpClass::attention);
  const double b = 2, s = 2048, h = 2304, t = 2;
  EXPECT_DOUBLE_EQ(flash.layer.recompute.flops(), 4 * b * s * s * h / t);

  scenario.training.recompute = Recompute::full;
  const Workload full = build_workload(scenario);
  EXPECT_EQ(full.layer.recompute.ops.size(), full.layer.forward.ops.size());
  EXPECT_DOUBLE_EQ(full.layer.recompute.bytes(), full.layer.forward.bytes());
  EXPECT_EQ(full.layer.recompute.tp.size(), full.layer.forward.tp.size());
}

TEST(Workload, AttentionBackwardIsTwiceForward) {
  Scenario scenario = llama3_8b();
  for (bool flash : {false, true}) {
    scenario.training.flash_attention = flash;
    const Workload workload = build_workload(scenario);
    const double s = 4096, h = 4096;
    double forward = 0, backward = 0;
    for (const Op& op : workload.layer.forward.ops)
      if (op.op_class == OpClass::attention || op.name.starts_with("attn_")) forward += op.flops;
    for (const Op& op : workload.layer.backward_input.ops)
      if (op.op_class == OpClass::attention || op.name.starts_with("attn_")) backward += op.flops;
    EXPECT_DOUBLE_EQ(forward, 4 * s * s * h);
    EXPECT_DOUBLE_EQ(backward, 2 * forward);
  }
  // FlashAttention's backward executes 2.5 times the forward (it recomputes the scores), counted as 2.
  const Workload workload = build_workload(scenario);
  const Op& forward = op_named(workload.layer.forward, "attn");
  const Op& backward = op_named(workload.layer.backward_input, "attn_grad");
  EXPECT_DOUBLE_EQ(backward.flops + backward.uncounted_flops, 2.5 * forward.flops);
  const RooflineModel roofline(scenario.cluster.gpu);
  EXPECT_DOUBLE_EQ(roofline.op_time(backward, Dtype::bf16).seconds, 2.5 * roofline.op_time(forward, Dtype::bf16).seconds);
}

TEST(Workload, Fp8CurrentScalingReadsEachCastTensorOnceMore) {
  Scenario scenario = llama3_8b();
  scenario.training.dtype = Dtype::fp8;
  const Workload delayed = build_workload(scenario);
  scenario.training.fp8_recipe = Fp8Recipe::tensorwise;
  const Workload current = build_workload(scenario);
  const double tokens = 4096, h = 4096, q = 32 * 128, ffn = 14336;
  // The amax pass reads the bf16 tensor before the cast reads it again.
  EXPECT_DOUBLE_EQ(op_named(current.layer.forward, "fc2_input_cast").bytes, tokens * ffn * (2 + 2 + 2));
  EXPECT_DOUBLE_EQ(op_named(delayed.layer.forward, "fc2_input_cast").bytes, tokens * ffn * (2 + 2));
  EXPECT_DOUBLE_EQ(op_named(current.layer.forward, "proj_input_cast").bytes, tokens * q * (2 + 2 + 2));
  // The norm writes bf16; the linear after it casts.
  EXPECT_DOUBLE_EQ(op_named(current.layer.forward, "ln1").bytes, tokens * h * (2 + 2));
  EXPECT_DOUBLE_EQ(op_named(current.layer.forward, "qkv_input_cast").bytes, tokens * h * (2 + 2 + 2));
  EXPECT_FALSE(has_op(delayed.layer.forward, "qkv_input_cast"));
  EXPECT_FALSE(has_op(current.layer.backward_weight, "qkv_input_transpose"));  // the cast wrote the transpose
  EXPECT_DOUBLE_EQ(op_named(current.layer.backward_input, "fc1_grad_cast").bytes, tokens * 2 * ffn * (2 + 2 + 2));
  for (auto pass : {&UnitWork::forward, &UnitWork::backward_input, &UnitWork::backward_weight})
    EXPECT_DOUBLE_EQ((current.layer.*pass).flops(), (delayed.layer.*pass).flops());
}

TEST(Workload, MemoryBoundOpsCarryNoFlops) {
  const Workload workload = build_workload(gpt(2304, 24, 24, 1, 512));
  for (const UnitWork* unit : {&workload.layer, &workload.embedding, &workload.head})
    for (const Pass* pass : {&unit->forward, &unit->backward_input, &unit->backward_weight})
      for (const Op& op : pass->ops) {
        EXPECT_GT(op.bytes, 0) << op.name;
        if (op.op_class == OpClass::memory_bound) {
          EXPECT_EQ(op.flops, 0) << op.name;
        }
      }
  EXPECT_EQ(workload.embedding.forward.flops(), 0);
  EXPECT_TRUE(workload.embedding.backward_input.ops.empty());
}

TEST(Workload, GemmShapesAndBytes) {
  const Workload workload = build_workload(llama3_8b());
  const Op& qkv = workload.layer.forward.ops[1];
  ASSERT_EQ(qkv.name, "qkv");
  EXPECT_EQ(qkv.shape, (std::vector<int64_t>{4096, 6144, 4096}));  // (32 + 2·8)·128
  EXPECT_DOUBLE_EQ(qkv.flops, 2.0 * 4096 * 6144 * 4096);
  EXPECT_DOUBLE_EQ(qkv.bytes, (4096.0 * 4096 + 4096.0 * 6144 + 4096.0 * 6144) * 2);
}

TEST(Workload, HeadAndEmbedding) {
  Scenario scenario = gpt(2304, 24, 24, 4, 512);
  const Workload workload = build_workload(scenario);
  const double h = 2304, V = 51200, t = 4, tokens = 2 * 2048;
  EXPECT_DOUBLE_EQ(workload.embedding.parameters, V * h / t + 2048 * h);
  EXPECT_DOUBLE_EQ(workload.head.parameters, 2 * h);  // tied
  EXPECT_DOUBLE_EQ(workload.head.backward_weight.flops(), 2 * tokens * V / t * h);
  EXPECT_DOUBLE_EQ(workload.head.activation_bytes, tokens * V / t * 4 + tokens * h * 2);
  ASSERT_EQ(workload.embedding.forward.tp.size(), 1u);
  EXPECT_EQ(workload.embedding.forward.tp[0].kind, TaskKind::ALLREDUCE);
}

TEST(Workload, TensorParallelMustDivideHeads) {
  Scenario scenario = llama3_8b();
  scenario.parallel.tensor = 16;  // 8 kv heads
  EXPECT_THROW(build_workload(scenario), InputError);
}

TEST(Workload, Names) {
  EXPECT_EQ(to_string(OpClass::memory_bound), "memory_bound");
  EXPECT_EQ(to_string(TaskKind::REDUCESCATTER), "REDUCESCATTER");
}

}  // namespace
}  // namespace simtrain
