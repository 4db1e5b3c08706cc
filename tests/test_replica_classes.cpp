// The symmetry-reduced replay (sim/engine/replica_classes.hpp) against the
// full one: the same step, the same split of every stage's time, the same
// bytes on every busy link, every task accounted for once, on fabrics and
// strategies where replicas are alike and where they are not.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sim/engine/simulate.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// TP 8 x PP 2 x DP 8 (128 GPUs, 16 DGX H100 nodes under one leaf) of a
// small GPT: 8 micro-batches per pipeline.
nlohmann::json small_job(const std::string& schedule = "1f1b") {
  nlohmann::json doc = fixtures::scenario_json(8, 2, 8, 8, schedule, schedule == "interleaved_1f1b" ? 2 : 0, 8);
  doc["model"]["hidden_size"] = 2048;
  doc["model"]["num_attention_heads"] = 16;
  return doc;
}

// Eight GPUs per node, two nodes per leaf, two leaves per pod: the job
// spans four pods, so its data-parallel rings cross leaves and pods.
nlohmann::json small_fat_tree(int leaf_oversubscription) {
  return {{"gpus_per_node", 8},   {"nvlink_GBps", 450},   {"nics_per_node", 8},
          {"nic_Gbps", 400},      {"rail_optimized", false}, {"nodes_per_unit", 2},
          {"units_per_pod", 2},   {"leaf_oversubscription", leaf_oversubscription}};
}

int classes(const Timeline& timeline, const Program& program) {
  const int ranks_per_replica = program.tensor_size * program.pipeline_size;
  if (timeline.representative_of_rank.empty()) return program.world_size / ranks_per_replica;
  int representatives = 0;
  for (int r = 0; r < program.world_size; ++r) representatives += timeline.representative_of_rank[r] == r;
  return representatives / ranks_per_replica;
}

void expect_near_fraction(double reduced, double full, double fraction_of, double fraction, const char* what) {
  EXPECT_NEAR(reduced, full, fraction * fraction_of) << what;
}

// Runs `scenario` both ways and compares; returns the reduced run's classes.
int expect_reduction_exact(const Scenario& scenario, ReplayOptions options = {}) {
  const Simulation reduced = simulate(scenario, options);
  options.full_replay = true;
  const Simulation full = simulate(scenario, options);
  EXPECT_TRUE(full.timeline.representative_of_rank.empty());
  EXPECT_EQ(reduced.timeline.stopped, full.timeline.stopped);
  const double step = full.timeline.step_seconds;
  EXPECT_NEAR(reduced.timeline.step_seconds, step, 1e-3 * step);
  EXPECT_EQ(reduced.report.stages.size(), full.report.stages.size());
  for (size_t s = 0; s < std::min(reduced.report.stages.size(), full.report.stages.size()); ++s) {
    const TimeSplit& a = reduced.report.stages[s].time;
    const TimeSplit& b = full.report.stages[s].time;
    expect_near_fraction(a.compute_seconds, b.compute_seconds, step, 5e-3, "compute");
    expect_near_fraction(a.exposed_tp_seconds, b.exposed_tp_seconds, step, 5e-3, "exposed TP");
    expect_near_fraction(a.exposed_ep_seconds, b.exposed_ep_seconds, step, 5e-3, "exposed EP");
    expect_near_fraction(a.exposed_cp_seconds, b.exposed_cp_seconds, step, 5e-3, "exposed CP");
    expect_near_fraction(a.exposed_pp_seconds, b.exposed_pp_seconds, step, 5e-3, "exposed PP");
    expect_near_fraction(a.exposed_dp_seconds, b.exposed_dp_seconds, step, 5e-3, "exposed DP");
    expect_near_fraction(a.idle_seconds, b.idle_seconds, step, 5e-3, "idle");
  }
  // The fabric carried every replica's traffic, not only the simulated ones'.
  EXPECT_EQ(reduced.timeline.busiest_links.size(), full.timeline.busiest_links.size());
  for (size_t i = 0; i < std::min(reduced.timeline.busiest_links.size(), full.timeline.busiest_links.size()); ++i) {
    EXPECT_EQ(reduced.timeline.busiest_links[i].link, full.timeline.busiest_links[i].link);
    EXPECT_NEAR(reduced.timeline.busiest_links[i].bytes, full.timeline.busiest_links[i].bytes,
                1e-9 * full.timeline.busiest_links[i].bytes);
  }
  if (!full.timeline.stopped) {
    // Every task ran once for each rank it stands for.
    EXPECT_EQ(reduced.timeline.tasks_stood_for, reduced.program.tasks.size());
    EXPECT_EQ(full.timeline.tasks_stood_for, full.program.tasks.size());
    for (size_t id = 0; id < reduced.timeline.tasks.size(); ++id) EXPECT_TRUE(reduced.timeline.tasks[id].ran()) << id;
  }
  EXPECT_LE(reduced.timeline.simulated_tasks, full.timeline.simulated_tasks);
  return classes(reduced.timeline, reduced.program);
}

}  // namespace

TEST(ReplicaClasses, AlikeReplicasOnOneLeafFormOneClass) {
  const Scenario s = fixtures::scenario_from(small_job());
  EXPECT_EQ(expect_reduction_exact(s), 1);
}

// A TP group's pipeline SEND is eight flows, one a rank over its own NIC:
// they start together with the same bytes over links alike, so max-min
// gives them one rate and the reduced replay sends them as one transfer over
// one NIC's links weighted for all eight; the full replay sends all eight.
// TP 8 x PP 2, one replica: 8 micro-batches, each sent forward and back,
// and the tied embedding's gradient all-reduced between the two stages (a
// two-rank ring: a flow each way).
TEST(ReplicaClasses, ATensorParallelGroupsPipelineSendGoesAsOneTransfer) {
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(8, 2, 1, 4, "1f1b"));
  EXPECT_EQ(expect_reduction_exact(s), 1);
  const int lane_tasks_flows = 2 * 8 + 2;
  EXPECT_EQ(simulate(s).timeline.flows, static_cast<uint64_t>(lane_tasks_flows));
  ReplayOptions full;
  full.full_replay = true;
  EXPECT_EQ(simulate(s, full).timeline.flows, static_cast<uint64_t>(8 * lane_tasks_flows));
}

TEST(ReplicaClasses, TheDefaultGpt3ShrunkTo128Gpus) {
  const Scenario s = load_scenario("gpt3-175b-1024xh100", {"num_gpus=128", "pipeline_model_parallel_size=2",
                                                           "num_hidden_layers=8", "global_batch_size=64"});
  EXPECT_LT(expect_reduction_exact(s), 8);
}

TEST(ReplicaClasses, AnOversubscribedFatTreeSplitsReplicasByWhereTheirRingsCrossLeaves) {
  nlohmann::json doc = small_job();
  doc["cluster"]["topology"] = small_fat_tree(4);
  const Scenario s = fixtures::scenario_from(doc);
  EXPECT_LT(expect_reduction_exact(s), 8);
}

TEST(ReplicaClasses, Torus) {
  nlohmann::json doc = small_job();
  doc["cluster"]["topology"] = "tpu-v5p-torus";
  expect_reduction_exact(fixtures::scenario_from(doc));
}

TEST(ReplicaClasses, Dragonfly) {
  nlohmann::json doc = small_job();
  doc["cluster"]["topology"] = "perlmutter-dragonfly";
  expect_reduction_exact(fixtures::scenario_from(doc));
}

TEST(ReplicaClasses, ParameterServerSync) {
  nlohmann::json doc = small_job();
  doc["cluster"]["topology"] = small_fat_tree(1);
  doc["parallelism"]["dp_sync"] = "parameter_server";
  doc["parallelism"]["parameter_servers"] = 2;
  EXPECT_LT(expect_reduction_exact(fixtures::scenario_from(doc)), 8);
}

TEST(ReplicaClasses, Zero3) {
  nlohmann::json doc = small_job();
  doc["parallelism"]["zero_stage"] = 3;
  EXPECT_EQ(expect_reduction_exact(fixtures::scenario_from(doc)), 1);
}

TEST(ReplicaClasses, InterleavedAndZeroBubbleSchedules) {
  EXPECT_EQ(expect_reduction_exact(fixtures::scenario_from(small_job("interleaved_1f1b"))), 1);
  EXPECT_EQ(expect_reduction_exact(fixtures::scenario_from(small_job("zb_h1"))), 1);
}

// Without a pipeline, a replica's NICs carry only data-parallel rings,
// whose flows start together everywhere (a barrier releases them): the
// slow replica is alone, the others stay one class.
TEST(ReplicaClasses, OneStragglerWithoutPipelineMakesTwoClasses) {
  nlohmann::json doc = fixtures::scenario_json(8, 1, 8, 4, "1f1b", 0, 4);
  doc["cluster"]["gpu_speed_factors"] = {{"21", 0.8}};
  EXPECT_EQ(expect_reduction_exact(fixtures::scenario_from(doc)), 2);
}

// With one, the slow replica's pipeline transfers share its NICs with its
// ring flows at other times than elsewhere: its ring neighbours see other
// traffic, split off too, and theirs in turn.
TEST(ReplicaClasses, OneStragglerInAPipelineSplitsOffWhatItsTrafficReaches) {
  nlohmann::json doc = small_job();
  doc["cluster"]["gpu_speed_factors"] = {{"21", 0.8}};
  EXPECT_GE(expect_reduction_exact(fixtures::scenario_from(doc)), 2);
}

TEST(ReplicaClasses, FivePercentStragglers) {
  nlohmann::json doc = small_job();
  doc["cluster"]["stragglers"] = {{"fraction", 0.05}, {"speed_factor", 0.7}, {"seed", 3}};
  const Scenario s = fixtures::scenario_from(doc);
  std::set<int> slow_replicas;
  for (size_t r = 0; r < s.cluster.heterogeneity.gpu_speed_factors.size(); ++r)
    if (s.cluster.heterogeneity.gpu_speed_factors[r] < 1) slow_replicas.insert(static_cast<int>(r) / 8 % 8);
  EXPECT_GE(expect_reduction_exact(s), static_cast<int>(slow_replicas.size()));
}

TEST(ReplicaClasses, AFailedCableOfALeafBundle) {
  nlohmann::json doc = small_job();
  doc["cluster"]["topology"] = small_fat_tree(1);
  ReplayOptions options;
  options.failures.push_back({0.0, -1, "leaf1_up", 3.0 / 4});  // one of its four physical uplinks
  expect_reduction_exact(fixtures::scenario_from(doc), options);
}

TEST(ReplicaClasses, AFailingGpuStopsTheReducedJobAtItsTime) {
  const Scenario s = fixtures::scenario_from(small_job());
  ReplayOptions options;
  options.failures.push_back({1e-3, 37, "", 0});
  expect_reduction_exact(s, options);
}

// Mixture of experts: the test GPT with 16 experts of width 256, top-2,
// 4 micro-batches per pipeline, under ZeRO-1 as MoE jobs run (its
// reduce-scatters are rings, alike on every rank; a small all-reduce would
// be NCCL's tree, whose ranks are not).
nlohmann::json moe_job(int tp, int pp, int dp, int ep) {
  nlohmann::json doc = fixtures::scenario_json(tp, pp, dp, 4, "1f1b", 0, 4);
  doc["model"].update({{"num_experts", 16}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 256}});
  doc["parallelism"]["expert_model_parallel_size"] = ep;
  doc["parallelism"]["zero_stage"] = 1;
  if (tp > 1) doc["parallelism"]["sequence_parallel"] = true;
  return doc;
}

// EP 8 inside each DGX node (Qwen3's layout, here PP 2 x DP 8): one replica
// runs for all 8, and each all-to-all's 7 flows, over NVLink ports alike,
// go as one weighted transfer. Without that merge the full replay would
// send exactly 8 times the reduced one's flows; with it, more.
TEST(ReplicaClasses, AnExpertGroupInsideANodeIsOneClass) {
  const Scenario s = fixtures::scenario_from(moe_job(1, 2, 8, 8));
  EXPECT_EQ(expect_reduction_exact(s), 1);
  ReplayOptions full;
  full.full_replay = true;
  EXPECT_GT(simulate(s, full).timeline.flows, 8 * simulate(s).timeline.flows);
}

// EP 16 over two nodes of a rail-optimised fat tree (32 GPUs, PP 2): each
// rank's all-to-all reaches its node over NVLink, its own rail through its
// leaf and the other rails through the pod. The expert group's ranks differ
// only in where they sit; what still tells replicas apart is the
// data-parallel ring, which leaves each node at its eighth rank: replicas i
// and i + 8 are alike, 8 classes.
TEST(ReplicaClasses, AnExpertGroupAcrossNodes) {
  nlohmann::json doc = moe_job(1, 2, 16, 16);
  doc["cluster"]["topology"] = small_fat_tree(1);
  doc["cluster"]["topology"]["rail_optimized"] = true;
  EXPECT_EQ(expect_reduction_exact(fixtures::scenario_from(doc)), 8);
}

// Refinement runs on one component of each kind (flows that start together
// over the same multiset of routes, as an all-to-all's at every layer and
// micro-batch) and weighs routes by kind and by the histories of each
// component's simulated flows (replica_classes.cpp). Here refinement must
// split replicas: EP 16 across the nodes of a 1:4 oversubscribed fat tree
// (where the data-parallel rings leave a node: 8 classes), alone and with
// one of a leaf's four uplinks failed; the reduced replay still runs as the
// full one.
TEST(ReplicaClasses, AllToAllsOverOversubscribedLeaves) {
  nlohmann::json doc = moe_job(1, 2, 16, 16);
  doc["cluster"]["topology"] = small_fat_tree(4);
  const Scenario s = fixtures::scenario_from(doc);
  EXPECT_EQ(expect_reduction_exact(s), 8);
  ReplayOptions options;
  options.failures.push_back({0.0, -1, "leaf1_up", 3.0 / 4});
  EXPECT_GE(expect_reduction_exact(s, options), 8);
}

// EP 8 beside TP 2 (sequence parallel), 32 GPUs: lanes of two ranks, the
// expert group across two nodes, four replicas a node; the ring leaves
// each node at its fourth replica: 4 classes.
TEST(ReplicaClasses, ExpertAndTensorParallelismTogether) {
  EXPECT_EQ(expect_reduction_exact(fixtures::scenario_from(moe_job(2, 2, 8, 8))), 4);
}

// Refinement cut short (here after 2 rounds, where it settles after 8)
// leaves classes of replicas alike that far: fewer than the exact ones, the
// report says the classes are approximate, every task still counts once and
// the fabric still carries every replica's bytes. The step stays within 1 %
// of the full replay's (measured: -0.06 %; 0.00 % on the 24,576-GPU job of
// llama3-405b-98kxh100's pods, README).
TEST(ReplicaClasses, RefinementCutShortGivesApproximateClasses) {
  nlohmann::json doc = small_job();
  doc["cluster"]["topology"] = small_fat_tree(1);
  ReplayOptions options;
  options.failures.push_back({0.0, -1, "leaf1_up", 3.0 / 4});
  const Scenario s = fixtures::scenario_from(doc);
  const Simulation exact = simulate(s, options);
  options.max_refinement_rounds = 2;
  const Simulation cut = simulate(s, options);
  options.full_replay = true;
  const Simulation full = simulate(s, options);

  EXPECT_EQ(exact.timeline.approximate_after_rounds, 0);
  EXPECT_EQ(cut.timeline.approximate_after_rounds, 2);
  EXPECT_EQ(cut.report.approximate_after_rounds, 2);
  EXPECT_NE(to_text(cut.report).find("alike over 2 rounds of refinement: approximate"), std::string::npos);
  EXPECT_LT(classes(cut.timeline, cut.program), classes(exact.timeline, exact.program));
  EXPECT_EQ(cut.timeline.tasks_stood_for, cut.program.tasks.size());
  ASSERT_EQ(cut.timeline.busiest_links.size(), full.timeline.busiest_links.size());
  for (size_t i = 0; i < full.timeline.busiest_links.size(); ++i)
    EXPECT_NEAR(cut.timeline.busiest_links[i].bytes, full.timeline.busiest_links[i].bytes,
                1e-9 * full.timeline.busiest_links[i].bytes);
  EXPECT_NEAR(cut.timeline.step_seconds, full.timeline.step_seconds, 1e-2 * full.timeline.step_seconds);
}
