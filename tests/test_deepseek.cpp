// DeepSeek-V3 (issue 17): models mixing dense and MoE layers (layer kinds by
// index, per-stage work, memory and exchanges), multi-head latent attention,
// the H800 and the deepseek-v3-2048xh800 scenario.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/simulate.hpp"
#include "sim/model/parameter_count.hpp"
#include "sim/model/partition.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/step/memory_model.hpp"
#include "program_laws.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// The test GPT of fixtures::scenario_json (h 512, 4 layers, 8 heads, biases,
// LayerNorm, GELU MLP 2048 wide, tied and learned embeddings) with 8 experts
// of width 256, top-2, on every layer but those `dense_rule` makes dense.
nlohmann::json mixed_json(int pp, int dp, int ep, const nlohmann::json& dense_rule) {
  nlohmann::json doc = fixtures::scenario_json(1, pp, dp, 4, "1f1b");
  doc["model"].update({{"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 256}});
  doc["model"].update(dense_rule);
  doc["parallelism"]["expert_model_parallel_size"] = ep;
  return doc;
}

bool has_op(const Pass& pass, const std::string& name) {
  for (const Op& op : pass.ops)
    if (op.name == name) return true;
  return false;
}

using fixtures::op_named;

// DeepSeek-V3 on one GPU: the whole model's work on one rank.
Scenario deepseek_on_one_gpu() {
  return load_scenario("deepseek-v3-2048xh800", {"num_gpus=1", "pipeline_model_parallel_size=1", "schedule=1f1b",
                                                 "expert_model_parallel_size=1", "global_batch_size=1"});
}

}  // namespace

// DeepSeek's first_k_dense_replace, Qwen's mlp_only_layers and
// decoder_sparse_step: each layer is built dense or MoE by its index.
TEST(MixedLayers, EachLayerIsDenseOrMoeByItsIndex) {
  const std::vector<std::pair<nlohmann::json, std::vector<bool>>> rules = {
      {{{"first_k_dense_replace", 1}}, {false, true, true, true}},
      {{{"mlp_only_layers", {0, 2}}}, {false, true, false, true}},
      {{{"decoder_sparse_step", 2}}, {false, true, false, true}},
      {{{"decoder_sparse_step", 2}, {"mlp_only_layers", {3}}}, {false, true, false, false}},
  };
  for (const auto& [rule, moe] : rules) {
    SCOPED_TRACE(rule.dump());
    const Scenario s = fixtures::scenario_from(mixed_json(1, 8, 4, rule));
    const Workload w = build_workload(s);
    int64_t moe_layers = 0;
    for (int layer = 0; layer < 4; ++layer) {
      EXPECT_EQ(s.model.is_moe_layer(layer), moe[layer]) << layer;
      EXPECT_EQ(has_op(w.layer_at(layer).forward, "expert_fc1"), moe[layer]) << layer;
      EXPECT_EQ(has_op(w.layer_at(layer).forward, "fc1"), !moe[layer]) << layer;
      moe_layers += moe[layer];
    }
    EXPECT_EQ(s.model.moe_layer_count(), moe_layers);
    EXPECT_EQ(w.dense_layers_among(0, 4), 4 - moe_layers);
  }
  // A model of one kind keeps one layer's work for every layer.
  for (const nlohmann::json& rule : {nlohmann::json::object(), nlohmann::json{{"num_experts", 0}}}) {
    nlohmann::json doc = mixed_json(1, 8, 1, rule);
    if (rule.contains("num_experts")) doc["model"] = fixtures::scenario_json(1, 1, 8, 4, "1f1b")["model"];
    const Workload w = build_workload(fixtures::scenario_from(doc));
    EXPECT_TRUE(w.dense_layers.empty());
    for (int layer = 0; layer < 4; ++layer) EXPECT_EQ(&w.layer_at(layer), &w.layer);
  }
  const ModelConfig deepseek = deepseek_on_one_gpu().model;
  for (int64_t layer = 0; layer < deepseek.num_layers; ++layer) EXPECT_EQ(deepseek.is_moe_layer(layer), layer >= 3);
}

// PP 2 with the first two layers dense: stage 0 runs no all-to-all and
// reduces no expert gradients; stage 1 does both. The FLOPs still add up.
TEST(MixedLayers, AStageWithoutMoeLayersHasNoAllToAllNorExpertGradients) {
  const Scenario s = fixtures::scenario_from(mixed_json(2, 4, 2, {{"first_k_dense_replace", 2}}));
  const Workload w = build_workload(s);
  const Program p = build_program(s, w);
  fixtures::expect_every_send_pairs_with_one_receive_of_the_same_size(p);
  fixtures::expect_group_members_issue_the_same_collectives(p);
  std::vector<int> all_to_alls(2), expert_reductions(2);
  for (const Task& t : p.tasks) {
    const int pp = p.coords[t.rank].pp;
    if (t.kind == TaskKind::ALLTOALL) ++all_to_alls[pp];
    if (t.group >= 0 && p.groups[t.group].name.rfind("edp", 0) == 0) ++expert_reductions[pp];
  }
  EXPECT_EQ(all_to_alls[0], 0);
  EXPECT_GT(all_to_alls[1], 0);
  EXPECT_EQ(expert_reductions[0], 0);
  EXPECT_GT(expert_reductions[1], 0);
  double flops = 0;
  for (const Task& t : p.tasks)
    if (t.work >= 0 && t.kind != TaskKind::OPT) flops += p.works[t.work].flops();
  EXPECT_NEAR(flops / w.hardware_flops_per_step, 1.0, 1e-9);
  EXPECT_GT(simulate(s).report.step_seconds, 0);
}

// ZeRO-1, DP 4, EP 2 (expert data parallel 2), PP 2, the first two layers
// dense, by hand: attention 4h^2 + 4h (with biases), two LayerNorms 4h; a
// dense MLP 2 x 2048h + 2048 + h; an MoE layer's router 8h with its bias 8
// (Megatron-Core's TopKRouter has one with add_bias_linear) and 4 local
// experts of 2 x 256h + 256 + h; the tied embedding (4096 + 512 positions) x h
// on the first stage, its copy of the word embeddings 4096h on the last with
// the final norm 2h.
TEST(MixedLayers, MemoryPerGpuFollowsTheLayersEachStageHolds) {
  nlohmann::json doc = mixed_json(2, 4, 2, {{"first_k_dense_replace", 2}});
  doc["parallelism"]["zero_stage"] = 1;
  const Scenario s = fixtures::scenario_from(doc);
  const Workload w = build_workload(s);
  const Program p = build_program(s, w);
  const double h = 512, attention = 4 * h * h + 4 * h + 4 * h, embedding = (4096 + 512) * h;
  const double dense_stage = embedding + 2 * (attention + 2 * 2048 * h + 2048 + h);
  const double experts = 2 * 4 * (2 * 256 * h + 256 + h);
  const double moe_stage = 2 * (attention + 8 * h + 8) + experts + 2 * h + 4096 * h;
  for (int rank = 0; rank < p.world_size; ++rank) {
    const bool first = p.coords[rank].pp == 0;
    const double parameters = first ? dense_stage : moe_stage, held_experts = first ? 0 : experts;
    EXPECT_EQ(parameters_on_rank(s, w, p, rank), parameters) << rank;
    const MemoryBreakdown m = memory_for_rank(s, w, p, rank);
    EXPECT_DOUBLE_EQ(m.weights_bytes, parameters * 2) << rank;
    EXPECT_DOUBLE_EQ(m.gradients_bytes, parameters * 4) << rank;
    EXPECT_DOUBLE_EQ(m.optimizer_bytes, (parameters - held_experts) * 12 / 4 + held_experts * 12 / 2) << rank;
  }
}

// "auto" stage layer counts for layers of different times: consecutive runs,
// the slowest stage as fast as can be; layers of one time as before.
TEST(MixedLayers, AutoPartitionBalancesLayersOfDifferentTimes) {
  EXPECT_EQ(balance_layer_sequence({3, 3, 3, 1, 1, 1, 1, 1, 1}, {0, 0, 0}), (std::vector<int>{2, 4, 3}));
  EXPECT_EQ(balance_layer_sequence({1, 1, 1, 1}, {0, 0, 0, 0}), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(balance_layer_sequence({1, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 2.5}), (std::vector<int>{3, 3, 1, 1}));
  EXPECT_EQ(balance_layer_sequence({5, 1, 1, 1, 1, 1}, {2, 0}), (std::vector<int>{1, 5}));

  // DeepSeek-V3 over PP 16: every stage holds layers, the 3 dense ones
  // (faster than an MoE layer) at the front.
  const Scenario s = load_scenario("deepseek-v3-2048xh800");
  const Workload w = build_workload(s);
  ASSERT_EQ(w.stage_layers.size(), 16u);
  int layers = 0;
  for (int count : w.stage_layers) {
    EXPECT_GE(count, 1);
    layers += count;
  }
  EXPECT_EQ(layers, 61);
  EXPECT_EQ(w.dense_layers_among(0, w.stage_layers[0]), 3);
}

// DeepSeek-V3's latent attention per layer (TP 1): q 7168 -> 1536 (norm) ->
// 128 x 192; kv 7168 -> 512 + 64 (norm) -> 128 x (128 + 128); attention with
// q/k heads of 192 and v heads of 128; out 128 x 128 -> 7168.
TEST(LatentAttention, OpShapesAndAttentionFlops) {
  const Scenario s = deepseek_on_one_gpu();
  const Workload w = build_workload(s);
  const int64_t tokens = 4096;
  const Pass& forward = w.layer.forward;
  EXPECT_EQ(op_named(forward, "q_down").shape, (std::vector<int64_t>{tokens, 1536, 7168}));
  EXPECT_EQ(op_named(forward, "q_norm").shape, (std::vector<int64_t>{tokens * 1536}));
  EXPECT_EQ(op_named(forward, "q_up").shape, (std::vector<int64_t>{tokens, 128 * 192, 1536}));
  EXPECT_EQ(op_named(forward, "kv_down").shape, (std::vector<int64_t>{tokens, 512 + 64, 7168}));
  EXPECT_EQ(op_named(forward, "kv_norm").shape, (std::vector<int64_t>{tokens * 512}));
  EXPECT_EQ(op_named(forward, "kv_up").shape, (std::vector<int64_t>{tokens, 128 * 256, 512}));
  EXPECT_EQ(op_named(forward, "proj").shape, (std::vector<int64_t>{tokens, 7168, 128 * 128}));
  EXPECT_FALSE(has_op(forward, "qkv"));
  const Op& attention = op_named(forward, "attn");
  EXPECT_EQ(attention.shape, (std::vector<int64_t>{1, 128, 4096, 192}));
  // Scores over 192-wide q/k heads, context over 128-wide v heads, the full s x s (as Megatron counts).
  EXPECT_DOUBLE_EQ(attention.flops, 2.0 * 4096 * 4096 * 128 * (192 + 128));
  EXPECT_DOUBLE_EQ(op_named(w.layer.backward_input, "attn_grad").flops, 2 * attention.flops);
  // The dense layers attend the same way.
  EXPECT_DOUBLE_EQ(op_named(w.dense_layer.forward, "attn").flops, attention.flops);
}

// The workload holds DeepSeek-V3's 671B parameters weight for weight, and
// runs 6 FLOPs per active parameter and token (37B, without the token
// table) plus attention's 6 s x heads x (192 + 128) per token and layer.
TEST(LatentAttention, ParametersAndFlopsPerTokenOfDeepSeekV3) {
  const Scenario s = deepseek_on_one_gpu();
  const Workload w = build_workload(s);
  const ParameterCount count = count_parameters(s.model);
  double parameters = w.embedding.parameters + w.head.parameters;
  for (int layer = 0; layer < 61; ++layer) parameters += w.layer_at(layer).parameters;
  EXPECT_EQ(parameters, count.total);
  EXPECT_EQ(w.total_parameters, count.total);
  double experts = 0;
  for (int layer = 0; layer < 61; ++layer) experts += w.layer_at(layer).expert_parameters;
  EXPECT_EQ(experts, 58 * 256 * 3 * 7168.0 * 2048);

  const double attention = 6.0 * 4096 * 128 * (192 + 128) * 61;
  const double expected = 6 * (count.active - count.embedding) + attention;
  EXPECT_NEAR(w.model_flops_per_step / w.tokens_per_step / expected, 1, 0.01);
}

// TP 8 splits the heads of the up-projections, the attention and proj; the
// down-projections and the latents' norms stay whole on every rank.
TEST(LatentAttention, TensorParallelismSplitsHeadsNotTheDownProjections) {
  const Scenario whole = deepseek_on_one_gpu();
  const Scenario split = load_scenario("deepseek-v3-2048xh800",
                                       {"num_gpus=8", "tensor_model_parallel_size=8", "sequence_parallel=true",
                                        "pipeline_model_parallel_size=1", "schedule=1f1b", "expert_model_parallel_size=1",
                                        "global_batch_size=1"});
  const Workload w1 = build_workload(whole), w8 = build_workload(split);
  const double replicated = 7168.0 * (1536 + 512 + 64) + 1536 + 512 + 2 * 7168;  // down-projections, norms
  EXPECT_DOUBLE_EQ(w8.dense_layer.parameters * 8 - 7 * replicated, w1.dense_layer.parameters);
  const Pass& f8 = w8.dense_layer.forward;
  EXPECT_EQ(op_named(f8, "q_down").shape, (std::vector<int64_t>{4096 / 8, 1536, 7168}));
  EXPECT_EQ(op_named(f8, "q_up").shape, (std::vector<int64_t>{4096, 128 / 8 * 192, 1536}));
  EXPECT_EQ(op_named(f8, "attn").shape, (std::vector<int64_t>{1, 128 / 8, 4096, 192}));
  // Sequence parallelism gathers the latents (fp8, for their linears) and
  // the rotary key (bf16), not the hidden state, into the attention.
  std::multiset<double> gathered;
  for (const TpCollectives& c : f8.tp)
    if (c.kind == TaskKind::ALLGATHER) gathered.insert(c.bytes);
  EXPECT_EQ(gathered, (std::multiset<double>{4096.0 * 1536, 4096.0 * 512, 4096.0 * 64 * 2, 4096.0 * 7168}));
}

// Selective recompute's modules (Megatron's recompute_modules) on DeepSeek-V3
// (fp8: the linears keep 1-byte casts of their inputs, the rest is bf16), one
// GPU, 4096 tokens: each module's ops run again before the backward (in fp8
// with the casts before their GEMMs), and the tensors it discards are no
// longer counted, by hand: mlp (dense layers) fc1's and fc2's inputs and the
// SwiGLU's; moe_act (MoE layers) the experts' fc2 input; layernorm the input
// norm's output (the down-projections' input) and, in MoE layers, the
// pre-MLP norm's (the router's bf16 input, the shared expert's); mla_up_proj
// the normed latents and Q, K, V.
TEST(SelectiveRecompute, EachModuleRecomputesItsOpsAndDropsTheTensorsItDiscards) {
  auto workload = [](const std::string& modules) {
    return build_workload(load_scenario(
        "deepseek-v3-2048xh800", {"num_gpus=1", "pipeline_model_parallel_size=1", "schedule=1f1b", "expert_model_parallel_size=1",
                                  "global_batch_size=1", "recompute_granularity=selective",
                                  "recompute_modules=" + modules}));
  };
  const Workload none = workload("[]");
  const double tokens = 4096, hidden = 7168, bf16 = 2, fp8 = 1;
  const double expert_rows = tokens * 8;  // top-8 over 256 balanced experts, all on this GPU
  const double q_k_v = tokens * (128 * 192 + 128 * 192 + 128 * 128) * bf16, latents = tokens * (1536 + 512) * fp8;
  struct Case {
    std::string module;
    std::vector<std::string> dense_ops, moe_ops;  // recomputed
    double dense_saved, moe_saved;                // bytes
  };
  const Case cases[] = {
      {"mlp",
       {"ln2", "fc1_input_cast", "fc1", "swiglu", "fc2_input_cast", "fc2"},
       {},
       tokens * hidden * fp8 + tokens * 18432 * fp8 + tokens * 2 * 18432 * bf16,
       0},
      {"moe_act", {}, {"expert_swiglu"}, 0, expert_rows * 2048 * fp8},
      {"layernorm", {"ln1"}, {"ln1", "ln2"}, tokens * hidden * fp8, tokens * hidden * (fp8 + bf16 + fp8)},
      {"mla_up_proj",
       {"q_up_input_cast", "q_up", "kv_up_input_cast", "kv_up"},
       {"q_up_input_cast", "q_up", "kv_up_input_cast", "kv_up"},
       q_k_v + latents,
       q_k_v + latents},
  };
  auto names = [](const Pass& pass) {
    std::vector<std::string> out;
    for (const Op& op : pass.ops) out.push_back(op.name);
    return out;
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.module);
    const Workload w = workload("[\"" + c.module + "\"]");
    EXPECT_EQ(names(w.dense_layer.recompute), c.dense_ops);
    EXPECT_EQ(names(w.layer.recompute), c.moe_ops);
    EXPECT_DOUBLE_EQ(none.dense_layer.activation_bytes - w.dense_layer.activation_bytes, c.dense_saved);
    EXPECT_DOUBLE_EQ(none.layer.activation_bytes - w.layer.activation_bytes, c.moe_saved);
    // The recomputed ops as the forward runs them.
    for (const Op& op : w.layer.recompute.ops) {
      EXPECT_DOUBLE_EQ(op.flops, op_named(w.layer.forward, op.name).flops) << op.name;
      EXPECT_DOUBLE_EQ(op.bytes, op_named(w.layer.forward, op.name).bytes) << op.name;
    }
  }
  // Together: the sum of each's.
  const Workload all = workload(R"(["core_attn", "mlp", "moe_act", "layernorm", "mla_up_proj"])");
  const Workload core_attn = workload(R"(["core_attn"])");
  double dense_saved = 0, moe_saved = 0;
  for (const Case& c : cases) dense_saved += c.dense_saved, moe_saved += c.moe_saved;
  EXPECT_DOUBLE_EQ(core_attn.layer.activation_bytes - all.layer.activation_bytes, moe_saved);
  EXPECT_DOUBLE_EQ(core_attn.dense_layer.activation_bytes - all.dense_layer.activation_bytes, dense_saved);
}

// Under TP 2 with sequence parallelism a recomputed module issues its
// collectives again: the MLP gathers its input (fp8, for fc1) and
// reduce-scatters its output (bf16); the up-projections gather the two
// latents (fp8) and the rotary key (bf16). The norms issue none.
TEST(SelectiveRecompute, RecomputedModulesIssueTheirCollectivesAgain) {
  auto recompute = [](const std::string& modules) {
    return build_workload(load_scenario("deepseek-v3-2048xh800",
                                        {"num_gpus=2", "tensor_model_parallel_size=2", "sequence_parallel=true",
                                         "pipeline_model_parallel_size=1", "schedule=1f1b", "expert_model_parallel_size=1",
                                         "global_batch_size=1", "recompute_granularity=selective",
                                         "recompute_modules=" + modules}))
        .dense_layer.recompute.tp;
  };
  auto kinds = [](const std::vector<TpCollectives>& tp) {
    std::multiset<std::pair<TaskKind, double>> out;
    for (const TpCollectives& c : tp) out.insert({c.kind, c.bytes});
    return out;
  };
  const double tokens = 4096;
  EXPECT_EQ(kinds(recompute(R"(["mlp"])")),
            (std::multiset<std::pair<TaskKind, double>>{{TaskKind::ALLGATHER, tokens * 7168},
                                                         {TaskKind::REDUCESCATTER, tokens * 7168 * 2}}));
  EXPECT_EQ(kinds(recompute(R"(["mla_up_proj"])")),
            (std::multiset<std::pair<TaskKind, double>>{{TaskKind::ALLGATHER, tokens * 1536},
                                                         {TaskKind::ALLGATHER, tokens * 512},
                                                         {TaskKind::ALLGATHER, tokens * 64 * 2}}));
  EXPECT_TRUE(recompute(R"(["layernorm"])").empty());
}

TEST(H800, IsAnH100SxmWithItsOwnNameAndTopology) {
  const auto find = [](const std::string& name) {
    for (const GpuSpec& gpu : builtin_gpus())
      if (gpu.name == name) return gpu;
    throw std::runtime_error("no GPU " + name);
  };
  const GpuSpec h800 = find("H800");
  const GpuSpec h100 = find("H100-SXM");
  EXPECT_EQ(h800.peak_bf16_flops, h100.peak_bf16_flops);
  EXPECT_EQ(h800.peak_fp8_flops, h100.peak_fp8_flops);
  EXPECT_EQ(h800.hbm_bytes_per_second, h100.hbm_bytes_per_second);
  EXPECT_EQ(h800.memory_bytes, h100.memory_bytes);
  EXPECT_EQ(h800.sm_count, h100.sm_count);
  const Scenario s = load_scenario("deepseek-v3-2048xh800");
  EXPECT_EQ(s.cluster.gpu.name, "H800");
  EXPECT_EQ(s.cluster.topology.nvlink_bytes_per_second, 200e9);  // 400 GB/s both directions together
  EXPECT_EQ(s.cluster.topology.nic_bytes_per_second, 50e9);      // 400 Gb/s InfiniBand per GPU
}

// The scenario as the technical report states it: 2048 GPUs, PP 16, EP 64,
// DP 128, ZeRO-1, fp8, 15360 sequences of 4096 tokens a step.
TEST(DeepSeekScenario, BuildsAsTheReportStatesIt) {
  const Scenario s = load_scenario("deepseek-v3-2048xh800");
  EXPECT_EQ(s.parallel.tensor, 1);
  EXPECT_EQ(s.parallel.pipeline, 16);
  EXPECT_EQ(s.parallel.expert, 64);
  EXPECT_EQ(s.parallel.data, 128);
  EXPECT_EQ(s.parallel.zero_stage, 1);
  EXPECT_EQ(s.training.dtype, Dtype::fp8);
  // Its recompute of RMSNorms, MLA up-projections and the MoE SwiGLU output (sections 3.2.3, 3.3.2).
  EXPECT_TRUE(s.training.recomputes("layernorm") && s.training.recomputes("mla_up_proj") &&
              s.training.recomputes("moe_act") && !s.training.recomputes("core_attn"));
  EXPECT_EQ(s.micro_batches(), 120);
  const Workload w = build_workload(s);
  EXPECT_EQ(w.tokens_per_step, 15360.0 * 4096);
}

// The scenario simulates (here on 32 GPUs, EP 2 and 32 micro-batches, the
// fewest DualPipe runs on PP 16: the full 2048 GPUs take tens of minutes,
// bench/scale.cpp), its Program holding together.
TEST(DeepSeekScenario, SimulatesOnFewerGpus) {
  const Scenario s = load_scenario("deepseek-v3-2048xh800",
                                   {"num_gpus=32", "expert_model_parallel_size=2", "global_batch_size=64"});
  const Workload w = build_workload(s);
  const Program p = build_program(s, w);
  fixtures::expect_every_send_pairs_with_one_receive_of_the_same_size(p);
  fixtures::expect_group_members_issue_the_same_collectives(p);
  int all_to_alls = 0;
  for (const Task& t : p.tasks) all_to_alls += t.kind == TaskKind::ALLTOALL;
  EXPECT_GT(all_to_alls, 0);
  const Simulation result = simulate(s);
  EXPECT_GT(result.report.step_seconds, 0);
  EXPECT_GT(result.report.mfu, 0);
}
