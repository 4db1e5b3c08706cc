// Megatron-Core's flex token dispatcher with DeepEP (moe_token_dispatcher_type
// flex): a token sent once to each EP rank holding any of its experts, the
// scenario's checks, and DeepEP's SMs beside compute.
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/compute_interference.hpp"
#include "sim/model/layers/moe_ops.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/scenario/rank_layout.hpp"
#include "program_laws.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// The test GPT (h 512, 4 layers, bf16) with `experts` experts of width 256,
// top-`top_k`, on `gpus` GPUs (8 a node) of data parallelism, EP `ep`; 512 tokens a rank.
nlohmann::json moe_json(int experts, int top_k, int ep, const std::string& dispatcher, int gpus = 8) {
  nlohmann::json doc = fixtures::scenario_json(1, 1, gpus, 4, "1f1b");
  doc["model"].update({{"num_experts", experts}, {"num_experts_per_tok", top_k}, {"moe_intermediate_size", 256}});
  doc["parallelism"]["expert_model_parallel_size"] = ep;
  doc["parallelism"]["moe_token_dispatcher_type"] = dispatcher;
  return doc;
}

// The bytes of each EP all-to-all rank 5 runs, how many it runs, and over which groups.
struct Exchanges {
  std::vector<double> bytes;
  int count = 0;
  std::set<std::vector<int>> groups;
};
Exchanges exchanges(const nlohmann::json& doc, const std::string& group_prefix = "ep") {
  const Scenario s = fixtures::scenario_from(doc);
  const Program p = build_program(s, build_workload(s));
  Exchanges e;
  for (int id : p.rank_tasks(5)) {
    const Task& t = p.tasks[id];
    if (t.kind != TaskKind::ALLTOALL || p.groups[t.group].name.rfind(group_prefix, 0) != 0) continue;
    EXPECT_EQ(t.dim, CommDim::ep);
    e.bytes.push_back(t.bytes);
    e.count += t.count;
    e.groups.insert(p.groups[t.group].ranks);
  }
  return e;
}

bool has_op(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops)
    if (op.name == name) return true;
  return false;
}

}  // namespace

// H (1 - C(E - E/H, K) / C(E, K)) against the pairs counted by hand.
TEST(FlexDispatcher, ExpectedDestinationsAreTheHandCountOfExpertPairs) {
  // 4 experts on 2 ranks, top-2: of the 6 pairs, 2 lie on one rank (1
  // destination), 4 across both (2): 10 / 6.
  EXPECT_DOUBLE_EQ(layers::expected_destinations(4, 2, 2), 10.0 / 6);
  // 8 experts on 4 ranks, top-2: 4 of 28 pairs on one rank, 24 on two: 52 / 28.
  EXPECT_DOUBLE_EQ(layers::expected_destinations(8, 2, 4), 52.0 / 28);
  // Any 3 of 4 experts span both ranks; one holder (one node) is always hit.
  EXPECT_DOUBLE_EQ(layers::expected_destinations(4, 3, 2), 2);
  EXPECT_DOUBLE_EQ(layers::expected_destinations(128, 8, 1), 1);
  // One expert a holder: a destination per routed expert.
  EXPECT_DOUBLE_EQ(layers::expected_destinations(8, 2, 8), 2);
}

// 8 experts on 4 ranks, top-2: each of the rank's 512 tokens goes to 52/28
// ranks on average, where the alltoall dispatcher sends 2 rows; dispatch
// and combine of each of the 4 layers, forward and backward, as many as the
// alltoall dispatcher's.
TEST(FlexDispatcher, SendsATokenOnceToEachRankHoldingAnyOfItsExperts) {
  const Exchanges flex = exchanges(moe_json(8, 2, 4, "flex"));
  const Exchanges alltoall = exchanges(moe_json(8, 2, 4, "alltoall"));
  ASSERT_FALSE(flex.bytes.empty());
  for (double bytes : flex.bytes) EXPECT_DOUBLE_EQ(bytes, 512 * (52.0 / 28) * 512 * 2);
  for (double bytes : alltoall.bytes) EXPECT_DOUBLE_EQ(bytes, 512.0 * 2 * 512 * 2);
  EXPECT_EQ(flex.count, alltoall.count);
  EXPECT_EQ(flex.count, 2 * 4 * 2 * 8);  // dispatch + combine, 4 layers, forward + backward, 8 micro-batches
}

// With one expert a rank every routed row goes to a rank of its own, for any top-k.
TEST(FlexDispatcher, MovesTheAlltoallsBytesWhereEachRankHoldsOneExpert) {
  for (int top_k : {1, 2}) {
    const Exchanges flex = exchanges(moe_json(8, top_k, 8, "flex"));
    const Exchanges alltoall = exchanges(moe_json(8, top_k, 8, "alltoall"));
    ASSERT_EQ(flex.bytes.size(), alltoall.bytes.size());
    for (size_t i = 0; i < flex.bytes.size(); ++i) EXPECT_DOUBLE_EQ(flex.bytes[i], alltoall.bytes[i]) << "top-" << top_k;
  }
}

// DeepEP's dispatch lands tokens grouped by source rank and one permutation
// sorts them by local expert: no chunk sort around the experts.
TEST(FlexDispatcher, PermutesTheReceivedTokensOnceWithoutSortingChunks) {
  const Workload alltoall = build_workload(fixtures::scenario_from(moe_json(8, 2, 4, "alltoall")));
  const Workload flex = build_workload(fixtures::scenario_from(moe_json(8, 2, 4, "flex")));
  EXPECT_TRUE(has_op(alltoall.layer.forward.ops, "moe_sort_chunks"));
  EXPECT_FALSE(has_op(flex.layer.forward.ops, "moe_sort_chunks"));
  EXPECT_FALSE(has_op(flex.layer.forward.ops, "moe_unsort_chunks"));
  EXPECT_TRUE(has_op(flex.layer.forward.ops, "moe_permute"));
}

TEST(FlexDispatcher, BadFieldsAreRefusedNamingTheField) {
  const std::string field = "test.json: parallelism.";
  EXPECT_EQ(fixtures::scenario_error(moe_json(8, 2, 4, "deepep")).rfind(field + "moe_token_dispatcher_type: ", 0), 0u);
  nlohmann::json ncclep = moe_json(8, 2, 4, "flex");
  ncclep["parallelism"]["moe_flex_dispatcher_backend"] = "ncclep";
  EXPECT_EQ(fixtures::scenario_error(ncclep),
            field + "moe_flex_dispatcher_backend: ncclep is not modelled: only DeepEP's (deepep) and HybridEP's "
                    "(hybridep) dispatch and combine are");
  nlohmann::json deepep = moe_json(8, 2, 4, "flex");
  deepep["parallelism"]["moe_flex_dispatcher_backend"] = "deepep";
  EXPECT_EQ(fixtures::scenario_error(deepep), "no error");
  nlohmann::json backend_without_flex = moe_json(8, 2, 4, "alltoall");
  backend_without_flex["parallelism"]["moe_flex_dispatcher_backend"] = "deepep";
  EXPECT_EQ(fixtures::scenario_error(backend_without_flex),
            field + "moe_flex_dispatcher_backend: is only used with moe_token_dispatcher_type flex, not alltoall");
  nlohmann::json odd_sms = moe_json(8, 2, 4, "flex");
  odd_sms["parallelism"]["moe_flex_dispatcher_num_sms"] = 21;
  EXPECT_EQ(fixtures::scenario_error(odd_sms),
            field + "moe_flex_dispatcher_num_sms: must be even, as DeepEP's Buffer.set_num_sms asserts, got 21");
  EXPECT_EQ(fixtures::scenario_error(moe_json(8, 2, 1, "flex")),
            field + "moe_token_dispatcher_type: flex (DeepEP) needs tensor x expert model parallel size > 1, as "
                    "Megatron-Core asserts, got 1");
  nlohmann::json overlapped = moe_json(8, 2, 4, "flex");  // Megatron overlaps alltoall and flex
  overlapped["parallelism"]["overlap_moe_expert_parallel_comm"] = true;
  EXPECT_EQ(fixtures::scenario_error(overlapped), "no error");
}

// Beside compute, the flex dispatcher's all-to-alls take DeepEP's SMs (20
// by default, Megatron-Core's), other collectives NCCL's CTAs.
TEST(FlexDispatcher, ExchangesBesideComputeTakeDeepEpsSms) {
  nlohmann::json doc = moe_json(8, 2, 4, "flex");
  const Scenario s = fixtures::scenario_from(doc);
  const double sms = s.cluster.gpu.sm_count;
  const ComputeInterference interference = compute_interference(s);
  EXPECT_DOUBLE_EQ(interference.flex_sm_share, 20 / sms);
  Task exchange{.stream = Stream::tp_overlap, .kind = TaskKind::ALLTOALL, .dim = CommDim::ep};
  EXPECT_DOUBLE_EQ(interference.sm_share(exchange), 20 / sms);
  Task reduction{.stream = Stream::tp_overlap, .kind = TaskKind::ALLREDUCE, .dim = CommDim::tp};
  EXPECT_DOUBLE_EQ(interference.sm_share(reduction), interference.nccl_sm_share);
  doc["parallelism"]["moe_flex_dispatcher_num_sms"] = 32;
  EXPECT_DOUBLE_EQ(compute_interference(fixtures::scenario_from(doc)).flex_sm_share, 32 / sms);
  EXPECT_DOUBLE_EQ(compute_interference(fixtures::scenario_from(moe_json(8, 2, 4, "alltoall"))).sm_share(exchange),
                   interference.nccl_sm_share);
}

// EP groups span nodes evenly where TP x EP and each stage's ranks fill whole nodes.
TEST(FlexDispatcher, ExpertGroupsSpanNodesWhereTheyFillThemEvenly) {
  ParallelConfig p;
  p.expert = 16;
  p.data = 16;
  EXPECT_EQ(expert_group_nodes(p, 8), 2);
  p.expert = 4;
  EXPECT_EQ(expert_group_nodes(p, 8), 1);  // within a node
  p.tensor = 2;
  p.expert = 8;
  p.data = 8;
  EXPECT_EQ(expert_group_nodes(p, 8), 2);  // 16 ranks, 4 members a node
  p.tensor = 1;
  p.expert = 12;
  p.data = 12;
  EXPECT_EQ(expert_group_nodes(p, 8), 1);  // 12 ranks: 8 and 4, unevenly
}

// 16 experts, top-2, EP 16 over two nodes of 8: a token crosses to each
// node holding any of its experts once, 23/15 rows a token (of the 120
// expert pairs 56 lie on one node, 64 on both), over the pair of ranks of
// one local index; then each rank forwards its own and the received tokens
// to their ranks inside the node: d_R = 2 rows a token (one expert a rank).
TEST(FlexDispatcher, AcrossNodesATokenCrossesOnceToEachNodeThenFansOutOverNvlink) {
  const nlohmann::json doc = moe_json(16, 2, 16, "flex", 16);
  const Exchanges across = exchanges(doc, "epacross");
  const Exchanges node = exchanges(doc, "epnode");
  EXPECT_EQ(across.groups, (std::set<std::vector<int>>{{5, 13}}));
  EXPECT_EQ(node.groups, (std::set<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  ASSERT_FALSE(across.bytes.empty());
  for (double bytes : across.bytes) EXPECT_DOUBLE_EQ(bytes, 512 * (184.0 / 120) * 512 * 2);
  for (double bytes : node.bytes) EXPECT_DOUBLE_EQ(bytes, 512.0 * 2 * 512 * 2);
  EXPECT_EQ(across.count, 2 * 4 * 2 * 8);
  EXPECT_EQ(node.count, across.count);
  // None over the whole EP group.
  EXPECT_EQ(exchanges(doc).groups, (std::set<std::vector<int>>{{5, 13}, {0, 1, 2, 3, 4, 5, 6, 7}}));
  const Scenario s = fixtures::scenario_from(doc);
  const Workload w = build_workload(s);
  fixtures::expect_program_holds_together(build_program(s, w), w);
}

// The per-node and across-node groups replay by replica classes as every replica does.
TEST(FlexDispatcher, ReplayByReplicaClassesMatchesTheFullReplayAcrossNodes) {
  fixtures::expect_replica_classes_replay_as_the_full_replay(fixtures::scenario_from(moe_json(16, 2, 16, "flex", 16)));
}

// With TP 2 the EP members are 2 apart: EP 8 spans two nodes, 4 members on each.
TEST(FlexDispatcher, WithTensorParallelismTheNodesHoldEveryOtherRank) {
  nlohmann::json doc = fixtures::scenario_json(2, 1, 8, 4, "1f1b");
  doc["model"].update({{"num_experts", 16}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 256}});
  doc["parallelism"].update({{"expert_model_parallel_size", 8}, {"moe_token_dispatcher_type", "flex"},
                             {"sequence_parallel", true}});
  EXPECT_EQ(exchanges(doc).groups, (std::set<std::vector<int>>{{5, 13}, {1, 3, 5, 7}}));
  const Scenario s = fixtures::scenario_from(doc);
  const Workload w = build_workload(s);
  fixtures::expect_program_holds_together(build_program(s, w), w);
}

// HybridEP (moe_flex_dispatcher_backend hybridep; deepseek-ai/DeepEP
// hybrid-ep 94a9f8f6, docs/Hybrid-EP_Implementation.md section 8): like
// DeepEP, a token over RDMA once to each destination node's peer of its
// local index, then over NVLink to each destination rank: the same rows,
// within a node and across nodes, over the same groups. Beside each row of
// the exchange carrying the probabilities (one of a pass's two) the fp32
// probabilities of the destination node's experts: 16 x 4 bytes against a
// 512 x 2-byte row in a node, half of them across two nodes.
TEST(FlexDispatcher, HybridEpExchangesTheRowsDeepEpDoesAndTheProbabilities) {
  for (const auto& [gpus, ep, probability_share] :
       std::vector<std::tuple<int, int, double>>{{8, 4, 64.0 / 1024}, {16, 16, 32.0 / 1024}}) {
    nlohmann::json hybrid = moe_json(16, 2, ep, "flex", gpus);
    hybrid["parallelism"]["moe_flex_dispatcher_backend"] = "hybridep";
    for (const std::string prefix : {"ep", "epacross", "epnode"}) {
      const Exchanges deepep_rows = exchanges(moe_json(16, 2, ep, "flex", gpus), prefix);
      const Exchanges hybridep_rows = exchanges(hybrid, prefix);
      if (prefix == "ep") ASSERT_FALSE(deepep_rows.bytes.empty());
      std::multiset<double> expected;
      for (double bytes : deepep_rows.bytes) expected.insert({bytes, bytes * (1 + probability_share)});
      EXPECT_EQ(std::multiset<double>(hybridep_rows.bytes.begin(), hybridep_rows.bytes.end()), expected)
          << prefix << " EP " << ep;
      EXPECT_EQ(hybridep_rows.count, deepep_rows.count);
      EXPECT_EQ(hybridep_rows.groups, deepep_rows.groups);
    }
  }
}

// HybridEP's checks: its SMs need not be even, and Megatron-Core asserts TP x
// EP > 1 for DeepEP and NCCL EP only (moe/token_dispatcher.py __init__).
TEST(FlexDispatcher, HybridEpIsAcceptedWithItsOwnChecks) {
  nlohmann::json hybrid = moe_json(8, 2, 4, "flex");
  hybrid["parallelism"]["moe_flex_dispatcher_backend"] = "hybridep";
  EXPECT_EQ(fixtures::scenario_error(hybrid), "no error");
  EXPECT_EQ(fixtures::scenario_from(hybrid).parallel.moe_flex_backend, FlexBackend::hybridep);
  hybrid["parallelism"]["moe_flex_dispatcher_num_sms"] = 21;
  EXPECT_EQ(fixtures::scenario_error(hybrid), "no error");
  hybrid["parallelism"]["moe_flex_dispatcher_num_sms"] = 0;
  EXPECT_EQ(fixtures::scenario_error(hybrid),
            "test.json: parallelism.moe_flex_dispatcher_num_sms: must be at least 1, got 0");
  nlohmann::json uneven = moe_json(24, 2, 12, "flex", 24);  // 12 ranks: 8 on one node, 4 on the next
  uneven["parallelism"]["moe_flex_dispatcher_backend"] = "hybridep";
  EXPECT_EQ(fixtures::scenario_error(uneven),
            "test.json: parallelism.moe_flex_dispatcher_backend: hybridep needs the tensor x expert group (12 ranks) "
            "to fill whole nodes evenly, as HybridEPBuffer asserts, with 8 GPUs a node");
  nlohmann::json alone = moe_json(8, 2, 1, "flex");
  alone["parallelism"]["moe_flex_dispatcher_backend"] = "hybridep";
  EXPECT_EQ(fixtures::scenario_error(alone), "no error");
}

// HybridEP's SMs where unset: 24 for a group inside one node, 8 for one
// across nodes (DeepEP hybrid-ep 94a9f8f6, csrc/hybrid_ep/config.cuh
// Configurer); a setting overrides both.
TEST(FlexDispatcher, HybridEpTakesItsDefaultSmsBesideCompute) {
  nlohmann::json in_node = moe_json(8, 2, 4, "flex");
  in_node["parallelism"]["moe_flex_dispatcher_backend"] = "hybridep";
  const Scenario s = fixtures::scenario_from(in_node);
  const double sms = s.cluster.gpu.sm_count;
  EXPECT_DOUBLE_EQ(compute_interference(s).flex_sm_share, 24 / sms);
  nlohmann::json across = moe_json(16, 2, 16, "flex", 16);
  across["parallelism"]["moe_flex_dispatcher_backend"] = "hybridep";
  EXPECT_DOUBLE_EQ(compute_interference(fixtures::scenario_from(across)).flex_sm_share, 8 / sms);
  in_node["parallelism"]["moe_flex_dispatcher_num_sms"] = 16;
  EXPECT_DOUBLE_EQ(compute_interference(fixtures::scenario_from(in_node)).flex_sm_share, 16 / sms);
}
