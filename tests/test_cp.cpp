// Context parallelism (issue 17): the sequence split over CP ranks, ring
// attention's K/V exchange (p2p) or the all-gather of K/V, Ulysses' (a2a)
// all-to-alls and both at once (a2a+p2p), causal load balancing, gradients and optimizer state over DP x CP, memory per GPU, and
// the scenario fields' checks.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/simulate.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/search/search.hpp"
#include "sim/step/memory_model.hpp"
#include "program_laws.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// The test GPT of fixtures::scenario_json (h 512, 4 layers, 8 heads of 64,
// seq 512, tied and learned embeddings) on tp x pp x dp x cp GPUs.
nlohmann::json cp_json(int tp, int pp, int dp, int cp, const std::string& comm_type = "p2p") {
  nlohmann::json doc = fixtures::scenario_json(tp, pp, dp, 4, "1f1b");
  doc["cluster"]["num_gpus"] = tp * pp * dp * cp;
  if (cp > 1) doc["parallelism"].update({{"context_parallel_size", cp}, {"cp_comm_type", comm_type}});
  return doc;
}

Scenario cp_scenario(int tp, int pp, int dp, int cp, const std::string& comm_type = "p2p") {
  return fixtures::scenario_from(cp_json(tp, pp, dp, cp, comm_type));
}

// a2a+p2p with hierarchical_context_parallel_sizes [inner, outer]: CP = inner x outer.
nlohmann::json hierarchical_json(int tp, int pp, int dp, int inner, int outer) {
  nlohmann::json doc = cp_json(tp, pp, dp, inner * outer, "a2a+p2p");
  doc["parallelism"]["hierarchical_context_parallel_sizes"] = {inner, outer};
  return doc;
}

std::vector<Op> attention_ops(const Pass& pass) {
  std::vector<Op> ops;
  for (const Op& op : pass.ops)
    if (op.op_class == OpClass::attention) ops.push_back(op);
  return ops;
}

std::set<std::vector<int>> groups_named(const Program& p, const std::string& prefix) {
  std::set<std::vector<int>> groups;
  for (const Group& g : p.groups)
    if (g.name.rfind(prefix, 0) == 0 && std::isdigit(static_cast<unsigned char>(g.name[prefix.size()])))
      groups.insert(g.ranks);
  return groups;
}

int cp_group_of(const Program& p, int rank) {
  for (const Group& g : p.groups)
    if (g.dim == CommDim::cp && std::find(g.ranks.begin(), g.ranks.end(), rank) != g.ranks.end()) return g.id;
  return -1;
}

int first_cp_task(const Program& p, int rank) {
  for (int id : p.rank_tasks(rank))
    if (p.tasks[id].dim == CommDim::cp) return id;
  return -1;
}

// `rank`'s CP exchanges by the pass they follow, named, of micro-batch 0;
// `check` sees every CP task of every micro-batch.
std::map<TaskKind, std::vector<std::string>> cp_exchanges_by_pass(const Program& p, int rank,
                                                                 const std::function<void(const Task&)>& check) {
  std::map<TaskKind, std::vector<std::string>> exchanges;
  TaskKind pass = TaskKind::F;
  for (int id : p.rank_tasks(rank)) {
    const Task& t = p.tasks[id];
    if (is_model_pass(t.kind)) pass = t.kind;
    if (t.dim != CommDim::cp) continue;
    check(t);
    if (t.microbatch == 0) exchanges[pass].push_back(task_name(p, t));
  }
  return exchanges;
}

// The same tasks, task for task (by name), with the same dependencies.
void expect_same_tasks(const Program& a, const Program& b) {
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    const int id = static_cast<int>(i);
    EXPECT_EQ(task_name(a, a.tasks[id]), task_name(b, b.tasks[id]));
    EXPECT_TRUE(std::ranges::equal(a.deps(id), b.deps(id))) << task_name(a, a.tasks[id]);
  }
}

}  // namespace

// context_parallel_size 1 written out is today's scenario: the same Program, task for task.
TEST(ContextParallel, OneIsTodaysProgram) {
  nlohmann::json given = cp_json(2, 2, 2, 1);
  given["parallelism"]["context_parallel_size"] = 1;
  const Scenario with_field = fixtures::scenario_from(given), without = cp_scenario(2, 2, 2, 1);
  const Program a = build_program(with_field, build_workload(with_field));
  const Program b = build_program(without, build_workload(without));
  expect_same_tasks(a, b);
  EXPECT_EQ(a.groups.size(), b.groups.size());
}

// Causal load balancing: rank i holds chunks i and 2·CP−1−i, so each of its
// CP attention blocks is the work of a causal attention over its seq/CP
// tokens, and the rank runs exactly 1/CP of the whole sequence's attention
// FLOPs (forward and backward); with free communication its attention
// compute time is 1/CP of CP 1's as well (16K tokens: compute-bound blocks).
TEST(ContextParallel, RingAttentionRunsTheAttentionFlopsOverCpOnEveryRank) {
  static constexpr int64_t seq = 16384;
  const auto long_context = [](int cp, const std::string& comm_type) {
    nlohmann::json doc = cp_json(1, 1, 1, cp, comm_type);
    doc["training"]["seq_length"] = seq;
    doc["model"]["max_position_embeddings"] = seq;
    return fixtures::scenario_from(doc);
  };
  const Scenario whole = long_context(1, "p2p");
  const Workload w1 = build_workload(whole);
  RooflineEfficiency no_launch_floor;  // the test GPT's blocks are shorter than a kernel launch
  no_launch_floor.min_kernel_seconds = 0;
  const RooflineModel roofline(whole.cluster.gpu, no_launch_floor);
  const auto seconds = [&](const std::vector<Op>& ops) { return accumulate_op_seconds(0, roofline, ops, Dtype::bf16); };
  for (int cp : {2, 4, 8}) {
    for (const std::string comm_type : {"p2p", "all_gather"}) {
      const Scenario s = long_context(cp, comm_type);
      const Workload w = build_workload(s);
      for (const auto pass : {&UnitWork::forward, &UnitWork::backward_input}) {
        const std::vector<Op> blocks = attention_ops(w.layer.*pass), full = attention_ops(w1.layer.*pass);
        ASSERT_EQ(blocks.size(), size_t(cp));
        ASSERT_EQ(full.size(), 1u);
        for (const Op& block : blocks) {
          EXPECT_EQ(block.flops, full[0].flops / (cp * cp));  // each block: (seq/CP)² of seq²
          EXPECT_EQ(block.shape, (std::vector<int64_t>{1, 8, seq / cp, 64}));
        }
        EXPECT_EQ(total_flops(blocks), full[0].flops / cp);
        // Each block runs at the efficiency of its own shape (sim/model/attention_efficiency.hpp).
        const RooflineEfficiency e;
        const GpuSpec& gpu = whole.cluster.gpu;
        EXPECT_NEAR(seconds(blocks), seconds(full) / cp * e.attention(gpu, full[0]) / e.attention(gpu, blocks[0]),
                    1e-9 * seconds(full));
      }
      // Every rank's FLOPs together are the model's, as Megatron counts them.
      EXPECT_DOUBLE_EQ(w.model_flops_per_step, w1.model_flops_per_step);
      EXPECT_EQ(w.stage_boundary_bytes, w1.stage_boundary_bytes / cp);  // pipeline sends carry seq/CP tokens
    }
  }
  // 4·b·s²·(heads·head_dim): the whole causal attention, counted as Megatron counts it (full s×s).
  EXPECT_EQ(attention_ops(w1.layer.forward)[0].flops, 4.0 * seq * seq * 512);
}

// Ulysses (a2a): each rank runs one causal attention over the whole sequence
// with 1/CP of the heads, the same FLOPs as ring attention's CP blocks and
// one block's HBM traffic.
TEST(ContextParallel, UlyssesRunsOneAttentionOverTheWholeSequenceWithHeadsOverCp) {
  const Workload w1 = build_workload(cp_scenario(1, 1, 1, 1));
  const std::vector<Op> full = attention_ops(w1.layer.forward);
  ASSERT_EQ(full.size(), 1u);
  for (int cp : {2, 4, 8}) {
    const Workload w = build_workload(cp_scenario(1, 1, 1, cp, "a2a"));
    const Workload ring = build_workload(cp_scenario(1, 1, 1, cp, "p2p"));
    for (const auto pass : {&UnitWork::forward, &UnitWork::backward_input}) {
      const std::vector<Op> ops = attention_ops(w.layer.*pass);
      ASSERT_EQ(ops.size(), 1u);
      EXPECT_EQ(ops[0].shape, (std::vector<int64_t>{1, 8 / cp, 512, 64}));
      EXPECT_EQ(ops[0].flops, total_flops(attention_ops(ring.layer.*pass)));
      EXPECT_EQ(ops[0].flops, attention_ops(w1.layer.*pass)[0].flops / cp);
      EXPECT_EQ(ops[0].bytes, attention_ops(ring.layer.*pass)[0].bytes);
    }
    EXPECT_DOUBLE_EQ(w.model_flops_per_step, w1.model_flops_per_step);
  }
}

// TP 2 x CP 2 (a2a): per layer, blocking all-to-alls on the CP group of what
// each rank holds (256 tokens x 4 heads of 64 per TP rank, bf16): Q, K, V
// (3 x 128 KiB) then the output (128 KiB) forward; backward the output with
// its gradient, then dQ, dK, dV; the selective recompute's attention again
// as forward. (Like TP's, a pass's blocking collectives follow its compute,
// ordered by size.)
TEST(ContextParallel, UlyssesExchangesHeadsForTheSequenceAroundAttention) {
  nlohmann::json doc = cp_json(2, 1, 1, 2, "a2a");
  doc["training"]["recompute_granularity"] = "selective";
  const Scenario s = fixtures::scenario_from(doc);
  const Program p = build_program(s, build_workload(s));
  const std::string group = p.groups[cp_group_of(p, 1)].name;
  const auto exchanges = cp_exchanges_by_pass(p, 1, [&](const Task& t) {
    EXPECT_EQ(t.kind, TaskKind::ALLTOALL);
    EXPECT_EQ(t.stream, Stream::compute);
    EXPECT_EQ(p.groups[t.group].ranks, (std::vector<int>{1, 3}));
  });
  const std::string qkv = "alltoall " + group + " heads 384KiB x4", out = "alltoall " + group + " heads 128KiB x4";
  const std::string out_and_gradient = "alltoall " + group + " heads 256KiB x4";
  EXPECT_EQ(exchanges, (std::map<TaskKind, std::vector<std::string>>{{TaskKind::F, {out, qkv}},
                                                                      {TaskKind::R, {out, qkv}},
                                                                      {TaskKind::B, {out_and_gradient, qkv}}}));
}

// a2a+p2p [A, B]: all-to-alls over A ranks leave each rank 1/A of the
// heads over A times its tokens, then ring attention over B ranks runs B
// blocks of seq/B tokens: the FLOPs of p2p's CP blocks and of a2a's one
// attention, each block one p2p block's HBM traffic.
TEST(ContextParallel, HierarchicalRunsRingBlocksOverTheOuterGroupWithHeadsOverTheInner) {
  for (const auto& [inner, outer] : std::vector<std::pair<int, int>>{{2, 2}, {2, 4}, {4, 2}, {8, 1}, {1, 8}}) {
    const int cp = inner * outer;
    SCOPED_TRACE(std::to_string(inner) + " x " + std::to_string(outer));
    const Workload w = build_workload(fixtures::scenario_from(hierarchical_json(1, 1, 1, inner, outer)));
    const Workload ring = build_workload(cp_scenario(1, 1, 1, cp, "p2p"));
    const Workload ulysses = build_workload(cp_scenario(1, 1, 1, cp, "a2a"));
    for (const auto pass : {&UnitWork::forward, &UnitWork::backward_input}) {
      const std::vector<Op> blocks = attention_ops(w.layer.*pass);
      ASSERT_EQ(blocks.size(), size_t(outer));
      for (const Op& block : blocks) {
        EXPECT_EQ(block.shape, (std::vector<int64_t>{1, 8 / inner, 512 / outer, 64}));
        EXPECT_EQ(block.bytes, attention_ops(ring.layer.*pass)[0].bytes);
      }
      EXPECT_EQ(total_flops(blocks), total_flops(attention_ops(ring.layer.*pass)));
      EXPECT_EQ(total_flops(blocks), total_flops(attention_ops(ulysses.layer.*pass)));
      EXPECT_EQ(total_flops((w.layer.*pass).ops), total_flops((ring.layer.*pass).ops));
    }
    EXPECT_DOUBLE_EQ(w.model_flops_per_step, ring.model_flops_per_step);
  }
}

// TP 1 x CP 4 = 2 x 2: rank 1's all-to-all group is {0, 1} (A consecutive
// CP ranks), its ring group {1, 3} (the CP ranks A apart), as Megatron-Core's
// create_hierarchical_groups forms them. Per layer of 128 tokens x 8 heads
// of 64 (bf16): blocking all-to-alls over the inner group of Q, K, V (384
// KiB) and of the output (128 KiB) forward, of the output with its gradient
// (256 KiB) and dQ, dK, dV backward; beside the pass, the ring's K/V over
// the outer group: 2 chunks (B) of 2 x 128 x 512 x 2 bytes, and of dK/dV
// backward. (As for p2p and a2a, a pass's tasks on the overlap stream are
// listed first, then its blocking ones, ordered by size.)
TEST(ContextParallel, HierarchicalExchangesHeadsInsideAndKeysAndValuesAcross) {
  const Scenario s = fixtures::scenario_from(hierarchical_json(1, 1, 1, 2, 2));
  const Program p = build_program(s, build_workload(s));
  EXPECT_EQ(groups_named(p, "cpa2a"), (std::set<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(groups_named(p, "cpring"), (std::set<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(groups_named(p, "cp"), (std::set<std::vector<int>>{}));  // no group of all 4: nothing runs over it
  const auto exchanges = cp_exchanges_by_pass(p, 1, [&](const Task& t) {
    const std::vector<int> members = t.kind == TaskKind::ALLTOALL ? std::vector<int>{0, 1} : std::vector<int>{1, 3};
    EXPECT_EQ(p.groups[t.group].ranks, members);
    EXPECT_EQ(t.stream, t.kind == TaskKind::ALLTOALL ? Stream::compute : Stream::tp_overlap);
  });
  const auto name_of = [&](const std::vector<int>& ranks) {
    for (const Group& g : p.groups)
      if (g.ranks == ranks) return g.name;
    return std::string();
  };
  const std::string a2a = name_of({0, 1}), ring = name_of({1, 3});
  const std::string qkv = "alltoall " + a2a + " heads 384KiB x4", out = "alltoall " + a2a + " heads 128KiB x4";
  const std::string out_and_gradient = "alltoall " + a2a + " heads 256KiB x4";
  const std::string kv = "allgather " + ring + " kv p2p 512KiB x4", dkv = "reducescatter " + ring + " dkv p2p 512KiB x4";
  EXPECT_EQ(exchanges, (std::map<TaskKind, std::vector<std::string>>{{TaskKind::F, {kv, out, qkv}},
                                                                      {TaskKind::B, {dkv, kv, out_and_gradient, qkv}}}));
}

// TP 2 x CP 4 = 2 x 2 (tp-cp-dp order): the sub-groups of each TP rank's CP
// group {0, 2, 4, 6}; gradients are still reduced over DP x CP.
TEST(ContextParallel, HierarchicalGroupsFollowMegatronsRankOrder) {
  const Scenario s = fixtures::scenario_from(hierarchical_json(2, 1, 1, 2, 2));
  const Program p = build_program(s, build_workload(s));
  EXPECT_EQ(groups_named(p, "cpa2a"), (std::set<std::vector<int>>{{0, 2}, {4, 6}, {1, 3}, {5, 7}}));
  EXPECT_EQ(groups_named(p, "cpring"), (std::set<std::vector<int>>{{0, 4}, {2, 6}, {1, 5}, {3, 7}}));
  EXPECT_EQ(groups_named(p, "dp"), (std::set<std::vector<int>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

// [CP, 1] is a2a and [1, CP] is p2p: the same Program, task for task, and the same step.
TEST(ContextParallel, HierarchicalWithOneLevelIsUlyssesOrTheRing) {
  for (const auto& [inner, outer, plain] : std::vector<std::tuple<int, int, std::string>>{{4, 1, "a2a"}, {1, 4, "p2p"}}) {
    SCOPED_TRACE(plain);
    const Scenario hierarchical = fixtures::scenario_from(hierarchical_json(2, 2, 1, inner, outer));
    const Scenario one_level = fixtures::scenario_from(cp_json(2, 2, 1, 4, plain));
    const Program a = build_program(hierarchical, build_workload(hierarchical));
    const Program b = build_program(one_level, build_workload(one_level));
    expect_same_tasks(a, b);
    ASSERT_EQ(a.groups.size(), b.groups.size());
    for (size_t g = 0; g < a.groups.size(); ++g) EXPECT_EQ(a.groups[g].ranks, b.groups[g].ranks);
    const StepReport x = simulate(hierarchical).report, y = simulate(one_level).report;
    EXPECT_EQ(x.step_seconds, y.step_seconds);
    EXPECT_EQ(x.peak_memory_bytes, y.peak_memory_bytes);
  }
}

// TP 2 x CP 2 x DP 2 (Megatron's tp-cp-dp order): CP groups are TP-strided
// ({0, 2}, {1, 3}, ...); gradients are reduced over DP x CP ({0, 2, 4, 6}).
// Ring attention passes each rank's K/V chunk (2 x 256 tokens x 4 heads x 64
// x 2 bytes) around the CP ring beside each pass: the traffic of an
// all-gather of CP chunks forward, and of K/V and dK/dV backward.
TEST(ContextParallel, KeysAndValuesGoRoundTheCpGroupBesideEachPass) {
  const Scenario s = cp_scenario(2, 1, 2, 2);
  const Workload w = build_workload(s);
  const Program p = build_program(s, w);
  EXPECT_EQ(groups_named(p, "cp"), (std::set<std::vector<int>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(groups_named(p, "dp"), (std::set<std::vector<int>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(s.micro_batches(), 8);  // the global batch of 16 over DP 2, not DP x CP
  const double chunk_bytes = 2.0 * 256 * (4 * 64) * 2;
  std::map<std::pair<TaskKind, TaskKind>, int> exchanges;  // (pass, kind) -> tasks
  const RankTaskIds ids = p.rank_tasks(3);
  TaskKind pass = TaskKind::F;
  for (int id : ids) {
    const Task& t = p.tasks[id];
    if (is_model_pass(t.kind)) pass = t.kind;
    if (t.dim != CommDim::cp) continue;
    EXPECT_EQ(p.groups[t.group].ranks, (std::vector<int>{1, 3}));
    EXPECT_EQ(t.stream, Stream::tp_overlap);
    EXPECT_EQ(t.bytes, 2 * chunk_bytes);
    EXPECT_EQ(t.count, 4);  // one per layer
    ++exchanges[{pass, t.kind}];
  }
  EXPECT_EQ(exchanges, (std::map<std::pair<TaskKind, TaskKind>, int>{{{TaskKind::F, TaskKind::ALLGATHER}, 8},
                                                                      {{TaskKind::B, TaskKind::ALLGATHER}, 8},
                                                                      {{TaskKind::B, TaskKind::REDUCESCATTER}, 8}}));
  // The all_gather variant blocks the layer: the same exchanges on the compute stream.
  const Scenario gathered = cp_scenario(2, 1, 2, 2, "all_gather");
  const Program q = build_program(gathered, build_workload(gathered));
  std::vector<std::string> names;
  for (int id : q.rank_tasks(3))
    if (q.tasks[id].dim == CommDim::cp && q.tasks[id].stream == Stream::compute) names.push_back(task_name(q, q.tasks[id]));
  ASSERT_EQ(names.size(), 24u);
  const std::string group = q.groups[cp_group_of(q, 3)].name;
  EXPECT_EQ(names[0], "allgather " + group + " kv 512KiB x4");
  EXPECT_EQ(std::count(names.begin(), names.end(), "reducescatter " + group + " dkv 512KiB x4"), 8);
  EXPECT_EQ(task_name(p, p.tasks[first_cp_task(p, 3)]), "allgather " + p.groups[cp_group_of(p, 3)].name + " kv p2p 512KiB x4");
}

// Without TP nothing blocking follows a pass: the next pass (another
// micro-batch's, or the recompute or backward of this one) waits for ring
// attention's exchange.
TEST(ContextParallel, TheNextComputeWaitsForTheRingWithoutTensorParallelism) {
  const Scenario s = cp_scenario(1, 2, 1, 2);
  const Program p = build_program(s, build_workload(s));
  const RankTaskIds ids = p.rank_tasks(0);
  int checked = 0;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const Task& t = p.tasks[ids[i]];
    if (t.dim != CommDim::cp || p.tasks[ids[i + 1]].dim == CommDim::cp) continue;
    for (size_t next = i + 1; next < ids.size(); ++next) {
      const Task& n = p.tasks[ids[next]];
      if (!is_model_pass(n.kind)) continue;
      const TaskDeps deps = p.deps(n);
      EXPECT_NE(std::find(deps.begin(), deps.end(), t.id), deps.end()) << task_name(p, t) << " before " << task_name(p, n);
      ++checked;
      break;
    }
  }
  EXPECT_GT(checked, 0);
}

// The Program's checks for CP layouts: every task listed once by its rank,
// every SEND received once with its size, the members of each group (CP's
// too) issuing the same collectives, the compute adding up to the step's
// FLOPs; one replica per class replays as the full replay does.
TEST(ContextParallel, ContextParallelProgramsHoldTogether) {
  nlohmann::json zero1 = cp_json(1, 2, 2, 2);
  zero1["parallelism"].update({{"zero_stage", 1}, {"overlap_grad_reduce", true}, {"ddp_bucket_size", 100000}});
  nlohmann::json selective = cp_json(2, 2, 1, 2, "all_gather");
  selective["training"]["recompute_granularity"] = "selective";
  nlohmann::json sequence_parallel = cp_json(2, 1, 1, 4);
  sequence_parallel["parallelism"]["sequence_parallel"] = true;
  nlohmann::json ulysses = cp_json(2, 2, 1, 2, "a2a");
  ulysses["training"]["recompute_granularity"] = "selective";
  nlohmann::json hierarchical = hierarchical_json(2, 2, 1, 2, 2);
  hierarchical["training"]["recompute_granularity"] = "selective";
  for (const nlohmann::json& doc : {cp_json(1, 1, 1, 4), cp_json(2, 2, 2, 2), zero1, selective, sequence_parallel, ulysses,
                                    cp_json(1, 1, 2, 8, "a2a"), hierarchical, hierarchical_json(1, 1, 2, 2, 4)}) {
    const Scenario s = fixtures::scenario_from(doc);
    const Workload w = build_workload(s);
    const Program p = build_program(s, w);
    SCOPED_TRACE(doc["parallelism"].dump());
    fixtures::expect_program_holds_together(p, w);
    fixtures::expect_replica_classes_replay_as_the_full_replay(s);
  }
}

// By hand, for the test GPT (h 512, 4 layers, vocab 4096, 512 + 4096
// embedding rows) on one pipeline stage, DP 2 x CP 2, ZeRO-1, t = 512 / CP
// tokens a rank: a layer stores 34·t·h bytes (Korthikanti et al., flash
// attention), the head t x vocab fp32 logits and its t·h bf16 input; ring
// attention's double buffers of K/V and of K/V + dK/dV hold 4 chunks of
// 2·t·h bf16; the optimizer state is sharded over DP x CP = 4.
TEST(ContextParallel, MemoryPerGpuDividesActivationsByCpAndAddsTheRingsBuffers) {
  const double h = 512, vocab = 4096, layers = 4;
  const double parameters = layers * (12 * h * h + 13 * h) + (vocab + 512) * h + 2 * h;
  for (const auto& [cp, comm_type] : std::vector<std::pair<int, std::string>>{
           {1, "p2p"}, {2, "p2p"}, {4, "p2p"}, {2, "all_gather"}, {2, "a2a"}, {4, "a2a+p2p"}}) {
    nlohmann::json doc = comm_type == "a2a+p2p" ? hierarchical_json(1, 1, 2, 2, 2) : cp_json(1, 1, 2, cp, comm_type);
    doc["parallelism"]["zero_stage"] = 1;
    const Scenario s = fixtures::scenario_from(doc);
    const Workload w = build_workload(s);
    const Program p = build_program(s, w);
    SCOPED_TRACE(std::to_string(cp) + " " + comm_type);
    const double t = 512.0 / cp, chunk = 2 * t * h * 2;
    // a2a: the backward's output and its gradient received, dQ, dK, dV to send: 5·t·h bf16.
    // a2a+p2p (2 x 2) holds those and the ring's 4 chunks (of 1/2 the heads over 2·t tokens: the same bytes).
    const double all_to_all = 5 * t * h * 2;
    const double buffers = cp == 1                    ? 0
                           : comm_type == "p2p"        ? 4 * chunk
                           : comm_type == "all_gather" ? 2 * cp * chunk
                           : comm_type == "a2a"        ? all_to_all
                                                       : all_to_all + 4 * chunk;
    const MemoryBreakdown m = memory_for_rank(s, w, p, 1);
    EXPECT_EQ(parameters_on_rank(s, w, p, 1), parameters);
    // With the loss's transient bf16 copy of the logits (t x vocab x 2).
    EXPECT_DOUBLE_EQ(m.activations_bytes, layers * 34 * t * h + t * vocab * (4 + 2) + t * h * 2 + buffers);
    EXPECT_DOUBLE_EQ(m.weights_bytes, parameters * 2);
    EXPECT_DOUBLE_EQ(m.gradients_bytes, parameters * 4);
    EXPECT_DOUBLE_EQ(m.optimizer_bytes, parameters * 12 / (2 * cp));
    EXPECT_EQ(memory_per_pipeline_rank(s, w)[0].total_bytes(), m.total_bytes());
  }
}

TEST(ContextParallel, BadContextFieldsAreRefusedNamingTheField) {
  const auto with = [](nlohmann::json doc, const std::string& section, const nlohmann::json& fields) {
    doc[section].update(fields);
    return fixtures::scenario_error(doc);
  };
  const nlohmann::json cp2 = cp_json(1, 1, 2, 2);
  EXPECT_EQ(with(cp2, "cluster", {{"num_gpus", 5}}),
            "test.json: cluster.num_gpus: must be a multiple of tensor x pipeline x context parallel size (2), got 5");
  EXPECT_EQ(with(cp_json(1, 1, 1, 1), "parallelism", {{"cp_comm_type", "all_gather"}}),
            "test.json: parallelism.cp_comm_type: is only used with context_parallel_size > 1");
  EXPECT_EQ(with(cp2, "parallelism", {{"cp_comm_type", "ring"}}).rfind("test.json: parallelism.cp_comm_type: ", 0), 0u);
  // The test GPT's 8 heads: 4 per TP rank at TP 2, which CP 8 cannot split.
  EXPECT_EQ(fixtures::scenario_error(cp_json(2, 1, 1, 8, "a2a")),
            "test.json: parallelism.cp_comm_type: a2a splits each TP rank's heads over the CP ranks: "
            "context_parallel_size 8 must divide its 4 attention heads and 4 key-value heads");
  // a2a+p2p: hierarchical_context_parallel_sizes [A, B], A x B = CP, A dividing the TP rank's heads.
  const std::string sizes = "test.json: parallelism.hierarchical_context_parallel_sizes: ";
  const nlohmann::json cp4 = cp_json(1, 1, 1, 4, "a2a+p2p");
  EXPECT_EQ(fixtures::scenario_error(cp4),
            sizes + "missing: cp_comm_type a2a+p2p needs the inner and outer CP group sizes [A, B]");
  EXPECT_EQ(with(cp_json(1, 1, 1, 4), "parallelism", {{"hierarchical_context_parallel_sizes", {2, 2}}}),
            sizes + "is only used with cp_comm_type a2a+p2p, not p2p");
  EXPECT_EQ(with(cp4, "parallelism", {{"hierarchical_context_parallel_sizes", {2, 3}}}),
            sizes + "[2,3]: their product must be context_parallel_size (4)");
  for (const nlohmann::json& bad : {nlohmann::json{4}, nlohmann::json{2, 2, 1}, nlohmann::json{0, 4}, nlohmann::json("2x2")})
    EXPECT_EQ(with(cp4, "parallelism", {{"hierarchical_context_parallel_sizes", bad}}),
              sizes + "expected two positive integers [A, B] (the inner all-to-all and the outer ring group sizes), got " +
                  bad.dump());
  EXPECT_EQ(fixtures::scenario_error(hierarchical_json(2, 1, 1, 8, 1)),
            sizes + "a2a+p2p splits each TP rank's heads over the inner CP group: its size 8 must divide its 4 "
                    "attention heads and 4 key-value heads");
  nlohmann::json grouped_query = hierarchical_json(1, 1, 1, 4, 2);
  grouped_query["model"]["num_key_value_heads"] = 2;
  EXPECT_EQ(fixtures::scenario_error(grouped_query),
            sizes + "a2a+p2p splits each TP rank's heads over the inner CP group: its size 4 must divide its 8 "
                    "attention heads and 2 key-value heads");
  EXPECT_EQ(with(cp_json(1, 1, 1, 8), "training", {{"seq_length", 504}}),
            "test.json: training.seq_length: must be a multiple of 2 x context_parallel_size (16): the load-balanced "
            "split gives each rank two chunks, got 504");
  EXPECT_EQ(with(cp2, "training", {{"flash_attention", false}}),
            "test.json: training.flash_attention: context parallelism runs Transformer Engine's fused attention: "
            "needs flash_attention");
  EXPECT_EQ(with(cp2, "parallelism", {{"dp_sync", "hierarchical"}}),
            "test.json: parallelism.dp_sync: dp_sync hierarchical is not simulated with context parallelism "
            "(context_parallel_size 2) yet");
  EXPECT_EQ(with(cp2, "parallelism", {{"data_parallel_size", 4}}),
            "test.json: parallelism.data_parallel_size: is 4 but num_gpus / (tensor x pipeline x context) = 2");
}

// The default search grid varies CP for a long context only, in powers of two
// whose 2 x CP chunks divide the sequence, up to 16.
TEST(ContextParallel, SearchGridVariesCpForLongContextsWhereItDivides) {
  const auto cp_values = [](int64_t seq) {
    nlohmann::json doc = cp_json(1, 1, 1, 1);
    doc["training"]["seq_length"] = seq;
    doc["model"]["max_position_embeddings"] = seq;
    for (const Dimension& d : default_dimensions(fixtures::scenario_from(doc)))
      if (d.key == "context_parallel_size") return d.values;
    return std::vector<nlohmann::json>{};
  };
  EXPECT_EQ(cp_values(8192), std::vector<nlohmann::json>{});
  EXPECT_EQ(cp_values(131072), (std::vector<nlohmann::json>{1, 2, 4, 8, 16}));
  EXPECT_EQ(cp_values(3 * 16384 + 3 * 4), (std::vector<nlohmann::json>{1, 2}));  // 49164 = 4 x 12291
}
