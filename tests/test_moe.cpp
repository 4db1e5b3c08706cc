// Mixture of experts with expert parallelism (issue 17): the MoE layer's work,
// the token exchange over the expert-parallel group, expert gradients over
// the expert-data-parallel group, memory with experts sharded, and the
// scenario fields' checks.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/simulate.hpp"
#include "sim/model/parameter_count.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/trace.hpp"
#include "sim/step/memory_model.hpp"
#include "program_laws.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// The test GPT of fixtures::scenario_json (h 512, 4 layers, 8 heads, biases,
// LayerNorm, GELU, tied and learned embeddings) with 8 experts of width 256, top-2.
nlohmann::json moe_json(int tp, int pp, int dp, int ep) {
  nlohmann::json doc = fixtures::scenario_json(tp, pp, dp, 4, "1f1b");
  doc["model"].update({{"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 256}});
  doc["parallelism"]["expert_model_parallel_size"] = ep;
  if (tp > 1) doc["parallelism"]["sequence_parallel"] = true;
  return doc;
}

Scenario moe_scenario(int tp, int pp, int dp, int ep) { return fixtures::scenario_from(moe_json(tp, pp, dp, ep)); }

// An MoE scenario under ZeRO stage `zero_stage`, with its workload and Program.
struct ShardedJob {
  Scenario s;
  Workload w;
  Program p;
};
ShardedJob sharded_job(nlohmann::json doc, int zero_stage) {
  doc["parallelism"]["zero_stage"] = zero_stage;
  ShardedJob job{fixtures::scenario_from(doc), {}, {}};
  job.w = build_workload(job.s);
  job.p = build_program(job.s, job.w);
  return job;
}

double seconds_of(const std::vector<Op>& ops, const Scenario& s, const std::string& prefix) {
  const std::unique_ptr<CostModel> model = make_cost_model(s);
  double seconds = 0;
  for (const Op& op : ops)
    if (op.name.rfind(prefix, 0) == 0) seconds += model->op_time(op, s.training.dtype).seconds;
  return seconds;
}

using fixtures::op_named;

}  // namespace

// Megatron's count (as the published model TFLOP/s): 6 FLOPs per active
// parameter and token (the token table's lookup none), plus attention's
// 12 s x (heads x head_dim) per token and layer, forward and backward.
TEST(Moe, FlopsPerTokenAreSixTimesTheActiveParametersPlusAttention) {
  for (const char* name : {"qwen3-30b-a3b-16xh100", "mixtral-8x7b-64xh100"}) {
    const Scenario s = load_scenario(name);
    const Workload w = build_workload(s);
    const ParameterCount count = count_parameters(s.model);
    const ModelConfig& m = s.model;
    const double attention = 12.0 * double(s.training.seq_length) * double(m.num_attention_heads * m.head_dim) *
                             double(m.num_layers);
    const double expected = 6 * (count.active - count.embedding) + attention;
    EXPECT_NEAR(w.model_flops_per_step / w.tokens_per_step / expected, 1, 0.01) << name;
    EXPECT_EQ(w.total_parameters, count.total) << name;
  }
}

// Mixtral on EP 8 holds one expert a rank: the busiest rank's grouped GEMMs
// are the busiest expert's, twice the mean's rows at imbalance 2, so twice
// the tiles: twice the time, less what the rounding of the last wave of
// tiles saves; Megatron's FLOP count stays the mean's.
TEST(Moe, LoadImbalanceTwoDoublesTheBusiestExpertsTime) {
  const Scenario balanced = load_scenario("mixtral-8x7b-64xh100");
  const Scenario skewed = load_scenario("mixtral-8x7b-64xh100", {"moe_load_imbalance=2"});
  const Workload wb = build_workload(balanced), ws = build_workload(skewed);
  for (const auto pass : {&UnitWork::forward, &UnitWork::backward_input, &UnitWork::backward_weight}) {
    const double ratio = seconds_of((ws.layer.*pass).ops, skewed, "expert_fc") /
                         seconds_of((wb.layer.*pass).ops, balanced, "expert_fc");
    EXPECT_LE(ratio, 2 + 1e-9);
    EXPECT_GE(ratio, 1.95);
    EXPECT_DOUBLE_EQ((ws.layer.*pass).flops(), (wb.layer.*pass).flops());
  }
  // The busiest expert's rows: the EP group's 8 x 4096 tokens x top-2 over 8 experts, doubled; a capacity factor caps them.
  EXPECT_EQ(op_named(ws.layer.forward, "expert_fc1").shape[0], 2 * 8 * 4096 * 2 / 8);
  const Scenario capped = load_scenario("mixtral-8x7b-64xh100", {"moe_load_imbalance=2", "capacity_factor=1.25"});
  EXPECT_EQ(op_named(build_workload(capped).layer.forward, "expert_fc1").shape[0], 8 * 4096 * 2 / 8 * 5 / 4);
}

// Qwen3-30B-A3B's 16 experts a rank: with moe_grouped_gemm (TE's
// GroupedLinear) a GEMM each over TE's 4 compute streams, else
// (SequentialMLP) a GEMM each in turn; in both, forward, input and weight
// gradients alike, the kernels of the rank's experts, not one GEMM of all.
TEST(Moe, ExpertGemmsAreAKernelAnExpertOnTransformerEnginesStreamsOrOneAfterAnother) {
  for (const bool grouped : {true, false}) {
    const Scenario s =
        load_scenario("qwen3-30b-a3b-16xh100", {std::string("moe_grouped_gemm=") + (grouped ? "true" : "false")});
    const Workload w = build_workload(s);
    for (const auto pass : {&UnitWork::forward, &UnitWork::backward_input, &UnitWork::backward_weight})
      for (const Op& op : (w.layer.*pass).ops)
        if (op.op_class == OpClass::gemm && op.name.starts_with("expert_fc")) {
          EXPECT_EQ(op.gemm_groups, 128 / 8) << op.name;
          EXPECT_EQ(op.gemm_streams, grouped ? 4 : 1) << op.name;
        }
  }
  const Scenario grouped = load_scenario("qwen3-30b-a3b-16xh100");
  const Scenario sequential = load_scenario("qwen3-30b-a3b-16xh100", {"moe_grouped_gemm=false"});
  const Workload wg = build_workload(grouped), ws = build_workload(sequential);
  EXPECT_GT(seconds_of(ws.layer.forward.ops, sequential, "expert_fc"),
            seconds_of(wg.layer.forward.ops, grouped, "expert_fc"));
  // The router's and the dense layers' GEMMs stay one kernel each.
  EXPECT_EQ(op_named(wg.layer.forward, "router").gemm_groups, 1);
  EXPECT_EQ(op_named(wg.layer.forward, "qkv").gemm_groups, 1);
}

// EP 4 of DP 8: ranks 0-3 and 4-7 exchange tokens; the experts' gradients
// are reduced between the ranks of one EP index ({0, 4}, {1, 5} ...), the
// rest over all 8.
TEST(Moe, TokensAreExchangedOverTheExpertGroupAndExpertGradientsOverTheExpertDataGroup) {
  const Scenario s = moe_scenario(1, 1, 8, 4);
  const Workload w = build_workload(s);
  const Program p = build_program(s, w);
  std::set<std::vector<int>> ep_groups, edp_groups;
  for (const Group& g : p.groups) {
    if (g.name.rfind("ep", 0) == 0) ep_groups.insert(g.ranks);
    if (g.name.rfind("edp", 0) == 0) edp_groups.insert(g.ranks);
  }
  EXPECT_EQ(ep_groups, (std::set<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(edp_groups, (std::set<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));

  // Each rank sends its 512 tokens x top-2 rows of 512 bf16 values: each of the 4 layers' dispatch and
  // combine after every pass.
  const double exchange_bytes = 512.0 * 2 * 512 * 2;
  std::map<TaskKind, int> exchanges_after;
  const RankTaskIds ids = p.rank_tasks(5);
  for (size_t i = 0; i < ids.size(); ++i) {
    const Task& t = p.tasks[ids[i]];
    if (t.kind != TaskKind::ALLTOALL) continue;
    EXPECT_EQ(t.dim, CommDim::ep);
    EXPECT_EQ(t.stream, Stream::compute);
    EXPECT_EQ(p.groups[t.group].ranks, (std::vector<int>{4, 5, 6, 7}));
    EXPECT_EQ(t.bytes, exchange_bytes);
    EXPECT_EQ(t.count, 2 * 4);
    exchanges_after[p.tasks[ids[i - 1]].kind] += 1;
  }
  EXPECT_EQ(exchanges_after, (std::map<TaskKind, int>{{TaskKind::F, 8}, {TaskKind::B, 8}}));

  double dense_bytes = 0, expert_bytes = 0;
  for (int id : p.rank_tasks(5)) {
    const Task& t = p.tasks[id];
    if (t.kind != TaskKind::ALLREDUCE || t.group < 0) continue;
    (p.groups[t.group].name.rfind("edp", 0) == 0 ? expert_bytes : dense_bytes) += t.bytes;
    if (p.groups[t.group].name.rfind("edp", 0) == 0) EXPECT_EQ(p.groups[t.group].ranks, (std::vector<int>{1, 5}));
  }
  const double experts = 4 * w.layer.expert_parameters;
  EXPECT_EQ(experts, 4 * 2 * (2 * 512.0 * 256 + 256 + 512));  // 4 layers x 2 local experts (fc1, fc2 and biases)
  EXPECT_DOUBLE_EQ(expert_bytes, experts * 4);
  EXPECT_DOUBLE_EQ(dense_bytes, (parameters_on_rank(s, w, p, 5) - experts) * 4);
}

// The Program's checks of tests/test_program.cpp for EP scenarios: every
// task listed once by its rank, every SEND received once with its size, the
// members of each group issuing the same collectives in the same order, and
// the compute adding up to the step's FLOPs.
TEST(Moe, ExpertParallelProgramsHoldTogether) {
  std::vector<nlohmann::json> documents = {moe_json(1, 1, 8, 4), moe_json(2, 2, 2, 2), moe_json(1, 2, 4, 4)};
  nlohmann::json allgather = moe_json(1, 1, 8, 8);
  allgather["parallelism"]["moe_token_dispatcher_type"] = "allgather";
  nlohmann::json zero1 = moe_json(1, 2, 4, 2);
  zero1["parallelism"].update({{"zero_stage", 1}, {"overlap_grad_reduce", true}, {"ddp_bucket_size", 100000}});
  documents.insert(documents.end(), {allgather, zero1});
  for (const nlohmann::json& doc : documents) {
    const Scenario s = fixtures::scenario_from(doc);
    const Workload w = build_workload(s);
    const Program p = build_program(s, w);
    SCOPED_TRACE(doc["parallelism"].dump());
    fixtures::expect_program_holds_together(p, w);
  }
}

// The replay runs the all-to-alls as flows; one replica per class of
// equivalent ones gives what replaying every one gives.
TEST(Moe, ReplayByReplicaClassesMatchesTheFullReplay) {
  for (const Scenario& s : {moe_scenario(1, 1, 8, 4), moe_scenario(1, 2, 4, 2)})
    fixtures::expect_replica_classes_replay_as_the_full_replay(s);
}

// Seconds during which at least one of the rank's tasks of that dimension runs.
double union_seconds(const Simulation& sim, int rank, CommDim dim) {
  std::vector<std::pair<double, double>> spans;
  for (int id : sim.program.rank_tasks(rank))
    if (sim.program.tasks[id].dim == dim) spans.push_back({sim.timeline.tasks[id].start, sim.timeline.tasks[id].end});
  std::sort(spans.begin(), spans.end());
  double seconds = 0, covered_until = 0;
  for (const auto& [start, end] : spans) {
    seconds += std::max(0.0, end - std::max(start, covered_until));
    covered_until = std::max(covered_until, end);
  }
  return seconds;
}

// The dispatch and combine all-to-alls are expert parallelism's own figure
// (issue 17), not tensor parallelism's: without TP, no TP time at all; with
// TP, the TP figure is the TP collectives' time alone. Every split still
// adds up to the step.
TEST(Moe, TheTokenExchangeIsReportedAsExposedEpNotTp) {
  ReplayOptions every_rank;  // each rank's own timeline, not its class representative's
  every_rank.full_replay = true;
  for (const int tp : {1, 2}) {
    SCOPED_TRACE("TP " + std::to_string(tp));
    const Simulation sim = simulate(moe_scenario(tp, 1, 4, 4), every_rank);
    const StepReport& r = sim.report;
    EXPECT_TRUE(r.dims.ep);
    EXPECT_FALSE(r.dims.cp);
    EXPECT_GT(r.mean_split.exposed_ep_seconds, 0);
    EXPECT_GT(r.exposed_over_compute.ep, 0);
    fixtures::expect_every_ranks_split_adds_up_to_the_step(r);
    for (int rank = 0; rank < sim.program.world_size; ++rank) {
      const TimeSplit& t = r.ranks[rank];
      EXPECT_NEAR(t.ep_seconds, union_seconds(sim, rank, CommDim::ep), 1e-12);
      EXPECT_NEAR(t.tp_seconds, union_seconds(sim, rank, CommDim::tp), 1e-12);
      EXPECT_LE(t.exposed_ep_seconds, t.ep_seconds + 1e-12);
      EXPECT_LE(t.exposed_tp_seconds, t.tp_seconds + 1e-12);
      if (tp == 1) EXPECT_EQ(t.tp_seconds, 0);
    }
  }
  EXPECT_FALSE(simulate(load_scenario("tiny-4gpu")).report.dims.ep);
}

// Each row a token routes to an expert keeps, for the backward, the inputs of
// the expert's two linears and of its activation, and its probability, which
// Megatron-Core multiplies in the activation; not the expert's output, which
// the unpermutation sums without weights (layer_memory.cpp).
TEST(Moe, EachRoutedRowKeepsItsLinearsAndActivationsInputsAndItsProbabilityNotItsOutput) {
  auto activation_bytes = [](int top_k) {
    nlohmann::json doc = moe_json(1, 1, 1, 1);
    doc["model"]["num_experts_per_tok"] = top_k;
    return build_workload(fixtures::scenario_from(doc)).layer.activation_bytes;
  };
  const double rows = 512;                                      // one more expert for each of the 512 tokens
  const double bytes_per_row = 2 * 512 + 2 * 256 + 2 * 256 + 4;  // fc1's and fc2's inputs, GELU's input (bf16), fp32 probability
  EXPECT_DOUBLE_EQ(activation_bytes(3) - activation_bytes(2), rows * bytes_per_row);
}

// ZeRO-1, DP 8, EP 4 (expert data parallel 2), by hand: per layer, attention
// 4h^2 + 4h (with biases), two LayerNorms 4h, the router 8h with its bias 8
// (Megatron-Core's TopKRouter has one with add_bias_linear), two local experts
// of 2 x 256h + 256 + h; the tied embedding (4096 + 512 positions) x h, the final norm 2h.
TEST(Moe, MemoryPerGpuShardsExpertStatesOverTheExpertDataGroup) {
  const nlohmann::json doc = moe_json(1, 1, 8, 4);
  const auto [s, w, p] = sharded_job(doc, 1);
  const double h = 512, expert = 2 * 256 * h + 256 + h;
  const double experts = 4 * 2 * expert;
  const double parameters = 4 * (4 * h * h + 4 * h + 4 * h + 8 * h + 8) + experts + (4096 + 512) * h + 2 * h;
  EXPECT_EQ(parameters_on_rank(s, w, p, 3), parameters);
  const MemoryBreakdown m = memory_for_rank(s, w, p, 3);
  EXPECT_DOUBLE_EQ(m.weights_bytes, parameters * 2);
  EXPECT_DOUBLE_EQ(m.gradients_bytes, parameters * 4);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, (parameters - experts) * 12 / 8 + experts * 12 / 2);
  // A checkpoint: the sharded optimizer state from every rank, the bf16 weights once: the dense ones
  // from data-parallel rank 0, each EP rank's experts from the first of their expert-data-parallel group.
  const std::vector<double> checkpoint = checkpoint_bytes_per_rank(s, w, p);
  const double rng = 16 * 1024;
  EXPECT_DOUBLE_EQ(checkpoint[0], parameters * 2 + m.optimizer_bytes + rng);
  EXPECT_DOUBLE_EQ(checkpoint[3], experts * 2 + m.optimizer_bytes + rng);
  EXPECT_DOUBLE_EQ(checkpoint[4], m.optimizer_bytes + rng);

  // ZeRO-2 shards the gradients as ZeRO-1 shards the optimizer state, and runs ZeRO-1's Program
  // but for its optimizer zeroing only the gradients it holds.
  const ShardedJob zero2 = sharded_job(doc, 2);
  const double gradient_shard = (parameters - experts) / 8 + experts / 2;
  EXPECT_DOUBLE_EQ(memory_for_rank(zero2.s, zero2.w, zero2.p, 3).gradients_bytes, gradient_shard * 4);
  Program zero2_as_zero1 = zero2.p;
  ASSERT_EQ(zero2_as_zero1.works.size(), p.works.size());
  for (size_t work = 0; work < p.works.size(); ++work) {
    if (p.works[work].name != "optimizer") continue;
    EXPECT_EQ(zero2_as_zero1.works[work].ops.back().name, "zero_grad");
    EXPECT_EQ(zero2_as_zero1.works[work].ops.back().shape.at(0), std::llround(gradient_shard));
    zero2_as_zero1.works[work] = p.works[work];
  }
  EXPECT_EQ(program_hash(zero2_as_zero1), program_hash(p));
}

// The distributed optimizer's weight all-gathers, overlapped with the next
// forward (overlap_param_gather) or after the optimizer: the same gathers,
// each bucket's experts over the expert-data-parallel group its gradients
// were reduced over and the rest over the data-parallel group.
TEST(Moe, OverlappedParameterGathersGoOverTheGroupsTheGradientsWereReducedOver) {
  nlohmann::json doc = moe_json(1, 2, 4, 2);
  doc["parallelism"].update({{"zero_stage", 1}, {"overlap_grad_reduce", true}, {"ddp_bucket_size", 100000}});
  const auto gathers = [](const Program& p, int rank) {
    std::multiset<std::pair<std::string, double>> found;
    for (int id : p.rank_tasks(rank))
      if (p.tasks[id].kind == TaskKind::ALLGATHER) found.insert({p.groups[p.tasks[id].group].name, p.tasks[id].bytes});
    return found;
  };
  const Scenario after = fixtures::scenario_from(doc);
  const Workload w = build_workload(after);
  const Program after_optimizer = build_program(after, w);
  doc["parallelism"]["overlap_param_gather"] = true;
  const Scenario overlapped = fixtures::scenario_from(doc);
  const Program during_forward = build_program(overlapped, w);
  fixtures::expect_program_holds_together(during_forward, w);
  for (int rank = 0; rank < during_forward.world_size; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto found = gathers(during_forward, rank);
    EXPECT_EQ(found, gathers(after_optimizer, rank));
    double expert_bytes = 0;
    for (const auto& [group, bytes] : found)
      if (group.rfind("edp", 0) == 0) expert_bytes += bytes;
    const int chunk_layers = 2;  // 4 layers over 2 stages
    EXPECT_DOUBLE_EQ(expert_bytes, chunk_layers * w.layer.expert_parameters * 2);  // bf16 weights
    // Gathered at the step's start, before the first forward.
    const RankTaskIds ids = during_forward.rank_tasks(rank);
    const auto first_forward = std::find_if(ids.begin(), ids.end(), [&](int id) {
      return during_forward.tasks[id].kind == TaskKind::F;
    });
    for (auto it = ids.begin(); it != first_forward; ++it)
      if (during_forward.tasks[*it].kind == TaskKind::ALLGATHER) EXPECT_EQ(during_forward.tasks[*it].stream, Stream::dp_gather);
    EXPECT_EQ(std::count_if(ids.begin(), first_forward,
                            [&](int id) { return during_forward.tasks[id].kind == TaskKind::ALLGATHER; }),
              static_cast<std::ptrdiff_t>(found.size()));
    // The first forward of a chunk, lowered in one task per bucket, is still one micro-batch's pass.
    const MemoryBreakdown overlapped_memory = memory_for_rank(overlapped, w, during_forward, rank);
    const MemoryBreakdown memory = memory_for_rank(after, w, after_optimizer, rank);
    EXPECT_EQ(overlapped_memory.activations_bytes, memory.activations_bytes);
    EXPECT_EQ(overlapped_memory.peak_in_flight_microbatches, memory.peak_in_flight_microbatches);
  }
  // With launches free: this small model's kernels are shorter than their launches.
  ReplayOptions free_launches;
  free_launches.free_launches = true;
  EXPECT_LT(simulate(overlapped, free_launches).report.step_seconds, simulate(after, free_launches).report.step_seconds);
}

// ZeRO-3 (FSDP) with expert parallelism, PP 2, DP 4, EP 2: before every
// forward and backward a chunk's dense weights are gathered over the
// data-parallel group and its routed experts over the expert-data-parallel
// group (2 ranks); after every backward their gradients are reduce-scattered
// over the same groups; each rank holds its shard of each.
TEST(Moe, FullyShardedExpertsGoOverTheExpertDataGroup) {
  const auto [s, w, p] = sharded_job(moe_json(1, 2, 4, 2), 3);
  fixtures::expect_program_holds_together(p, w);
  EXPECT_EQ(program_hash(p), program_hash(build_program(s, w, {.lower_every_rank = true})));
  const double experts = 2 * w.layer.expert_parameters;  // the chunk's 2 layers
  for (int rank = 0; rank < p.world_size; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    // The chunk's layers' dense weights and the first stage's embedding or
    // the last's head (its final norm and copy of the tied word embeddings).
    const bool first_stage = p.coords[rank].pp == 0;
    const double dense = 2 * (w.layer.parameters - w.layer.expert_parameters) +
                         (first_stage ? w.embedding.parameters : w.head.parameters);
    const double held_dense = parameters_on_rank(s, w, p, rank) - experts;
    int passes = 0, backwards = 0;
    std::map<std::pair<TaskKind, double>, int> expert_collectives, dense_collectives;
    for (int id : p.rank_tasks(rank)) {
      const Task& t = p.tasks[id];
      passes += t.kind == TaskKind::F || t.kind == TaskKind::B;
      backwards += t.kind == TaskKind::B;
      if (t.kind != TaskKind::ALLGATHER && t.kind != TaskKind::REDUCESCATTER) continue;
      const Group& g = p.groups[t.group];
      if (g.name.rfind("edp", 0) == 0) {
        EXPECT_EQ(g.ranks.size(), 2u);
        EXPECT_NE(std::ranges::find(g.ranks, rank), g.ranks.end());
        ++expert_collectives[{t.kind, t.bytes}];
      } else {
        EXPECT_EQ(g.dim, CommDim::dp);
        EXPECT_EQ(g.ranks.size(), 4u);
        ++dense_collectives[{t.kind, t.bytes}];
      }
    }
    EXPECT_EQ(expert_collectives, (std::map<std::pair<TaskKind, double>, int>{
                                      {{TaskKind::ALLGATHER, experts * 2}, passes},
                                      {{TaskKind::REDUCESCATTER, experts * 4}, backwards}}));
    EXPECT_EQ(dense_collectives, (std::map<std::pair<TaskKind, double>, int>{
                                     {{TaskKind::ALLGATHER, dense * 2}, passes},
                                     {{TaskKind::REDUCESCATTER, dense * 4}, backwards}}));
    const MemoryBreakdown m = memory_for_rank(s, w, p, rank);
    EXPECT_DOUBLE_EQ(m.weights_bytes, held_dense * 2 / 4 + experts * 2 / 2);
    EXPECT_DOUBLE_EQ(m.gradients_bytes, held_dense * 4 / 4 + experts * 4 / 2);
  }
  fixtures::expect_replica_classes_replay_as_the_full_replay(s);
}

TEST(Moe, BadExpertFieldsAreRefusedNamingTheField) {
  const auto with = [](nlohmann::json doc, const std::string& section, const nlohmann::json& fields) {
    doc[section].update(fields);
    return fixtures::scenario_error(doc);
  };
  const nlohmann::json moe = moe_json(1, 1, 8, 4);
  EXPECT_EQ(with(moe, "parallelism", {{"expert_model_parallel_size", 3}}),
            "test.json: parallelism.expert_model_parallel_size: must divide the data-parallel size (8): expert-parallel "
            "groups are carved out of it, got 3");
  nlohmann::json sixteen = moe_json(1, 1, 16, 16);
  EXPECT_EQ(fixtures::scenario_error(sixteen),
            "test.json: parallelism.expert_model_parallel_size: must divide the number of experts (8), got 16");
  EXPECT_EQ(with(fixtures::scenario_json(1, 1, 8, 4, "1f1b"), "parallelism", {{"expert_model_parallel_size", 2}}),
            "test.json: parallelism.expert_model_parallel_size: needs a model with experts, got 2");
  EXPECT_EQ(with(moe, "parallelism", {{"expert_tensor_parallel_size", 2}}),
            "test.json: parallelism.expert_tensor_parallel_size: only expert_tensor_parallel_size = "
            "tensor_model_parallel_size (1) is simulated, got 2");
  EXPECT_EQ(with(moe, "parallelism", {{"moe_token_dispatcher_type", "deepep"}}).rfind(
                "test.json: parallelism.moe_token_dispatcher_type: ", 0),
            0u);
  EXPECT_EQ(with(moe, "training", {{"moe_load_imbalance", 0.5}}),
            "test.json: training.moe_load_imbalance: must be a finite number of at least 1, got 0.5");
  EXPECT_EQ(with(moe, "training", {{"capacity_factor", 0}}).rfind("test.json: training.capacity_factor: must be", 0), 0u);
  EXPECT_EQ(with(moe, "parallelism", {{"zero_stage", 3}}), "no error");
  nlohmann::json no_sp = moe_json(2, 1, 4, 2);
  no_sp["parallelism"]["sequence_parallel"] = false;
  EXPECT_EQ(fixtures::scenario_error(no_sp), "test.json: parallelism.sequence_parallel: expert and tensor parallelism together need "
                             "sequence parallelism, as in Megatron");
  EXPECT_EQ(with(moe, "training", {{"capacity_factor", nullptr}}), "no error");  // null: dropless
}

namespace {

nlohmann::json with_overlapped_exchange(nlohmann::json doc) {
  doc["parallelism"]["overlap_moe_expert_parallel_comm"] = true;
  return doc;
}

// The compute task an all-to-all belongs to: the last F or B before it in the rank's list.
Task compute_before(const Program& p, const RankTaskIds& ids, size_t i) {
  while (i-- > 0)
    if (is_model_pass(p.tasks[ids[i]].kind)) return p.tasks[ids[i]];
  throw std::runtime_error("an all-to-all before any compute");
}

}  // namespace

// overlap_moe_expert_parallel_comm: in the 1F1B phase each forward after the
// rank's first backward and each backward before its last forward exchanges
// its tokens beside its compute (Megatron merges such a forward with such a
// backward); the warm-up forwards and cool-down backwards keep blocking
// exchanges. PP 1, 8 micro-batches: F0 .. F7 and B0 .. B7 alternate, so
// F0 and B7 block.
TEST(Moe, OverlappedExchangesAreTheOnesOfTheOneFOneBPhase) {
  const auto streams = [](const nlohmann::json& doc, int rank) {
    const Scenario s = fixtures::scenario_from(doc);
    const Program p = build_program(s, build_workload(s));
    std::map<std::pair<TaskKind, int>, std::set<Stream>> streams_of;  // (pass, micro-batch) -> its exchanges' streams
    const RankTaskIds ids = p.rank_tasks(rank);
    for (size_t i = 0; i < ids.size(); ++i)
      if (p.tasks[ids[i]].kind == TaskKind::ALLTOALL) {
        const Task compute = compute_before(p, ids, i);
        streams_of[{compute.kind, int(compute.microbatch)}].insert(p.tasks[ids[i]].stream);
      }
    return streams_of;
  };
  const auto overlapped = streams(with_overlapped_exchange(moe_json(1, 1, 8, 4)), 5);
  ASSERT_EQ(overlapped.size(), 16u);
  for (const auto& [pass, on] : overlapped) {
    const bool blocking = pass == std::pair{TaskKind::F, 0} || pass == std::pair{TaskKind::B, 7};
    EXPECT_EQ(on, std::set<Stream>{blocking ? Stream::compute : Stream::tp_overlap})
        << to_string(pass.first) << pass.second;
  }
  for (const auto& [pass, on] : streams(moe_json(1, 1, 8, 4), 5)) EXPECT_EQ(on, std::set<Stream>{Stream::compute});

  // Interleaved, PP 2, v 2: on the last stage's rank the first backward follows fewer forwards than on the first.
  nlohmann::json interleaved = with_overlapped_exchange(moe_json(1, 2, 4, 2));
  interleaved["parallelism"].update({{"schedule", "interleaved_1f1b"}, {"num_layers_per_virtual_pipeline_stage", 1}});
  const Scenario s = fixtures::scenario_from(interleaved);
  const Program p = build_program(s, build_workload(s));
  for (int rank = 0; rank < p.world_size; ++rank) {
    const RankTaskIds ids = p.rank_tasks(rank);
    size_t first_backward = ids.size(), last_forward = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (p.tasks[ids[i]].kind == TaskKind::B) first_backward = std::min(first_backward, i);
      if (p.tasks[ids[i]].kind == TaskKind::F) last_forward = i;
    }
    int beside = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (p.tasks[ids[i]].kind != TaskKind::ALLTOALL) continue;
      const bool in_steady_phase = compute_before(p, ids, i).kind == TaskKind::F ? i > first_backward : i < last_forward;
      EXPECT_EQ(p.tasks[ids[i]].stream, in_steady_phase ? Stream::tp_overlap : Stream::compute) << "rank " << rank;
      beside += in_steady_phase;
    }
    EXPECT_GT(beside, 0) << "rank " << rank;
  }
  fixtures::expect_program_holds_together(p, build_workload(s));
}

// Replayed, the overlapped exchanges run beside their compute: each starts
// before its compute ends, the rank's next compute waits for both, the
// step and the exposed EP time shrink, and the split still adds up. The
// replica classes still replay as the full replay.
TEST(Moe, OverlappedExchangesHideBehindCompute) {
  ReplayOptions every_rank;
  every_rank.full_replay = true;
  every_rank.free_launches = true;  // this small model's kernels are shorter than their launches
  const Simulation blocking = simulate(moe_scenario(1, 1, 8, 4), every_rank);
  const Scenario s = fixtures::scenario_from(with_overlapped_exchange(moe_json(1, 1, 8, 4)));
  const Simulation overlapped = simulate(s, every_rank);
  EXPECT_LT(overlapped.report.step_seconds, blocking.report.step_seconds);
  EXPECT_LT(overlapped.report.mean_split.exposed_ep_seconds, blocking.report.mean_split.exposed_ep_seconds);
  const Program& p = overlapped.program;
  const auto& times = overlapped.timeline.tasks;
  fixtures::expect_every_ranks_split_adds_up_to_the_step(overlapped.report);
  for (int rank = 0; rank < p.world_size; ++rank) {
    const RankTaskIds ids = p.rank_tasks(rank);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (p.tasks[ids[i]].stream != Stream::tp_overlap) continue;
      size_t compute = i, next = i + 1;
      while (!is_model_pass(p.tasks[ids[compute]].kind)) --compute;
      while (next < ids.size() && p.tasks[ids[next]].stream != Stream::compute) ++next;
      EXPECT_LT(times[ids[i]].start, times[ids[compute]].end);
      if (next < ids.size()) EXPECT_GE(times[ids[next]].start, times[ids[i]].end - 1e-12);
    }
  }
  fixtures::expect_replica_classes_replay_as_the_full_replay(s);
}

// Megatron-Core's TransformerConfig refuses the overlap without expert
// parallelism, with the allgather dispatcher, on a pipeline that is not
// interleaved, and with full recompute.
TEST(Moe, OverlappedExchangesNeedWhatMegatronNeeds) {
  const std::string field = "test.json: parallelism.overlap_moe_expert_parallel_comm: ";
  EXPECT_EQ(fixtures::scenario_error(with_overlapped_exchange(moe_json(1, 1, 8, 1))),
            field + "needs expert_model_parallel_size > 1");
  nlohmann::json allgather = with_overlapped_exchange(moe_json(1, 1, 8, 4));
  allgather["parallelism"]["moe_token_dispatcher_type"] = "allgather";
  EXPECT_EQ(fixtures::scenario_error(allgather), field + "needs moe_token_dispatcher_type alltoall or flex");
  EXPECT_EQ(fixtures::scenario_error(with_overlapped_exchange(moe_json(1, 2, 4, 2))),
            field + "needs the interleaved_1f1b schedule when pipeline_model_parallel_size > 1 (Megatron-LM asks for "
                    "a virtual pipeline size), not 1f1b");
  nlohmann::json recompute = with_overlapped_exchange(moe_json(1, 1, 8, 4));
  recompute["training"]["recompute_granularity"] = "full";
  EXPECT_EQ(fixtures::scenario_error(recompute), field + "does not run with recompute_granularity full");
  nlohmann::json not_boolean = moe_json(1, 1, 8, 4);
  not_boolean["parallelism"]["overlap_moe_expert_parallel_comm"] = "yes";
  EXPECT_EQ(fixtures::scenario_error(not_boolean).rfind(field, 0), 0u);
}

namespace {

// moe_json on 8 GPUs as DP 4 x CP 2 (ranks 2d and 2d + 1 split data-parallel rank d's sequences), EP `ep`.
nlohmann::json moe_context_json(int ep) {
  nlohmann::json doc = moe_json(1, 1, 8, ep);
  doc["parallelism"]["context_parallel_size"] = 2;
  doc["training"]["global_batch_size"] = 8 * 4;
  return doc;
}

}  // namespace

// With context parallelism Megatron-Core carves the EP groups out of a
// stage's DP x CP ranks (its expert grid is tp-ep-dp-pp over world / (ETP x
// EP x PP) expert-data-parallel ranks): EP 4 of DP 4 x CP 2 exchanges tokens
// among ranks 0-3 and 4-7, two CP pairs each; each rank sends the top-2
// copies of its half sequence. The experts' gradients are reduced over the
// ranks of one EP index, the dense ones over DP x CP; ZeRO-1 shards the
// experts' optimizer state over the 2 expert-data-parallel ranks.
TEST(Moe, WithContextParallelismTheExpertGroupsSpanTheCpRanks) {
  nlohmann::json doc = moe_context_json(4);
  doc["parallelism"]["zero_stage"] = 1;
  const Scenario s = fixtures::scenario_from(doc);
  EXPECT_EQ(s.parallel.expert_data(), 2);
  const Workload w = build_workload(s);
  const Program p = build_program(s, w);
  std::set<std::vector<int>> cp_groups, ep_groups, edp_groups, dp_groups;
  for (const Group& g : p.groups) {
    if (g.name.rfind("cp", 0) == 0) cp_groups.insert(g.ranks);
    if (g.name.rfind("ep", 0) == 0) ep_groups.insert(g.ranks);
    if (g.name.rfind("edp", 0) == 0) edp_groups.insert(g.ranks);
    if (g.name.rfind("dp", 0) == 0) dp_groups.insert(g.ranks);
  }
  EXPECT_EQ(cp_groups, (std::set<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(ep_groups, (std::set<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(edp_groups, (std::set<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(dp_groups, (std::set<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));

  const double exchange_bytes = 256.0 * 2 * 512 * 2;  // half of the 512-token sequence, top-2, h 512, bf16
  const double experts = 4 * 2 * (2 * 512.0 * 256 + 256 + 512);
  double expert_bytes = 0, dense_bytes = 0;
  int exchanges = 0;
  for (int id : p.rank_tasks(5)) {
    const Task& t = p.tasks[id];
    if (t.kind == TaskKind::ALLTOALL) {
      EXPECT_EQ(p.groups[t.group].ranks, (std::vector<int>{4, 5, 6, 7}));
      EXPECT_EQ(t.bytes, exchange_bytes);
      exchanges += t.count;
    }
    if ((t.kind == TaskKind::REDUCESCATTER || t.kind == TaskKind::ALLREDUCE) && t.dim == CommDim::dp)
      (p.groups[t.group].name.rfind("edp", 0) == 0 ? expert_bytes : dense_bytes) += t.bytes;
  }
  EXPECT_EQ(exchanges, 8 * 2 * 2 * 4);  // 8 micro-batches, forward and backward, dispatch and combine, 4 layers
  EXPECT_DOUBLE_EQ(expert_bytes, experts * 4);
  EXPECT_DOUBLE_EQ(dense_bytes, (parameters_on_rank(s, w, p, 5) - experts) * 4);
  const MemoryBreakdown m = memory_for_rank(s, w, p, 5);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, (parameters_on_rank(s, w, p, 5) - experts) * 12 / 8 + experts * 12 / 2);

  fixtures::expect_program_holds_together(p, w);
  fixtures::expect_replica_classes_replay_as_the_full_replay(s);
  EXPECT_EQ(fixtures::scenario_error(moe_context_json(3)),
            "test.json: parallelism.expert_model_parallel_size: must divide the data-parallel x context-parallel size "
            "(8): expert-parallel groups are carved out of them, got 3");
}
