// Checkpoint modes and tiers: the flows of a save beside a step's traffic
// (max-min on a shared NIC), each mode's phases, incremental saves, restores
// from the nearest tier that survived, the checkpoint section's fields.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "sim/base/input_error.hpp"
#include "sim/engine/storage_transfer.hpp"
#include "sim/longrun/save_phases.hpp"
#include "sim/longrun/train.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// One GPU per node, one NIC of 100 B/s each way: flows by hand.
Topology hundred_bytes_per_second_nics() {
  Topology t = fixtures::one_gpu_per_node(100e-9, 0);
  t.network_efficiency = 1;
  return t;
}

CheckpointFlows two_nodes_to_storage(double storage_bytes_per_second) {
  CheckpointFlows flows;
  flows.bytes_per_rank = {100, 100};
  flows.storage_bytes_per_second = storage_bytes_per_second;
  return flows;
}

// A cost by hand: shared storage writes in 30 s and reads in 20 s, host
// memory in 1 and 2 s, peer copies in 5 and 4 s.
CheckpointCost cost_by_hand() {
  CheckpointCost cost;
  cost.shared = {30, 20};
  cost.host_memory = {1, 2};
  cost.peer_memory = {5, 4};
  return cost;
}

// 10 s steps, a save every 5; the blocking part 1 s, the host copy (kept
// outside the training processes, as in-memory saves keep it) read in 2 s,
// the shared storage's copy readable 20 s after the blocking part and read
// in 50 s. Saves end their blocking part at 51 s, 102 s, 153 s ...
RunModel async_by_hand() {
  RunModel m;
  m.step_seconds = m.degraded_step_seconds = 10;
  m.checkpoint_every_steps = 5;
  m.steps = 20;
  m.checkpoint_write_seconds = 1;
  m.copies = {{Tier::host_memory, 0, 2, 1}, {Tier::shared, 20, 50, 1}};
  m.reliability.repair_hours = 1;
  m.reliability.detection_seconds = 60;
  m.reliability.reschedule_seconds = 120;
  m.reliability.spare_nodes = 1;
  return m;
}

RunResult failing_at(RunModel m, double at, Component component) {
  m.scheduled = {{at, {component, 0, true}}};
  return simulate_run(m, 1, true);
}

void expect_wall_is_the_sum_of_its_parts(const RunResult& r) {
  EXPECT_NEAR(r.wall_seconds,
              r.useful_seconds + r.checkpoint_seconds + r.persist_seconds + r.lost_seconds + r.restart_seconds +
                  r.degraded_seconds,
              1e-9 * r.wall_seconds);
}

}  // namespace

TEST(CheckpointFlows, APersistAndACollectiveOnOneNicShareItMaxMin) {
  const Topology t = hundred_bytes_per_second_nics();
  CheckpointFlows flows = two_nodes_to_storage(1e6);
  EXPECT_NEAR(simulate_checkpoint_flows(flows, t).checkpoint_seconds, 1, 1e-6);  // 100 B over a 100 B/s NIC
  flows.competing_bytes_per_nic = 100;  // each NIC also sends 100 B to the next node's
  const CheckpointFlowTimes both = simulate_checkpoint_flows(flows, t);
  EXPECT_NEAR(both.checkpoint_seconds, 2, 1e-6);  // 50 B/s each: both take twice as long
  EXPECT_NEAR(both.competing_seconds, 2, 1e-6);
}

TEST(CheckpointFlows, AStorageBoundPersistLeavesTheNicToTheCollective) {
  const Topology t = hundred_bytes_per_second_nics();
  CheckpointFlows flows = two_nodes_to_storage(20);  // 10 B/s each at the storage
  flows.competing_bytes_per_nic = 90;
  const CheckpointFlowTimes both = simulate_checkpoint_flows(flows, t);
  EXPECT_NEAR(both.checkpoint_seconds, 10, 1e-6);  // as alone: the storage binds it
  EXPECT_NEAR(both.competing_seconds, 1, 1e-6);    // 90 B/s, the NIC's rest
}

TEST(CheckpointFlows, PeerCopiesLeaveThroughTheSenderAndArriveThroughThePeer) {
  const Topology t = hundred_bytes_per_second_nics();
  CheckpointFlows flows = two_nodes_to_storage(1);  // the storage plays no part
  flows.peer_nodes = 1;                             // node 0 -> 1, node 1 -> 0
  EXPECT_NEAR(simulate_checkpoint_flows(flows, t).checkpoint_seconds, 1, 1e-6);
  flows.bytes_per_rank = {100, 100, 100};
  flows.peer_nodes = 2;  // each node to both others: 200 B out of each NIC
  EXPECT_NEAR(simulate_checkpoint_flows(flows, t).checkpoint_seconds, 2, 1e-6);
}

TEST(SavePhases, EachModeBlocksForItsOwnPart) {
  const CheckpointCost cost = cost_by_hand();
  CheckpointConfig c;
  SavePhases sync = save_phases(c, cost, 1);
  EXPECT_DOUBLE_EQ(sync.blocking_seconds, 30);
  ASSERT_EQ(sync.copies.size(), 1u);
  EXPECT_EQ(sync.copies[0].tier, Tier::shared);
  EXPECT_DOUBLE_EQ(sync.copies[0].read_seconds, 20);
  c.node_tiers = {StorageTier{}};  // a host-memory tier: a sync save waits for it too
  EXPECT_DOUBLE_EQ(save_phases(c, cost, 1).blocking_seconds, 31);

  c.mode = CheckpointMode::async;
  const SavePhases async = save_phases(c, cost, 1, 1.5, 3);
  EXPECT_DOUBLE_EQ(async.blocking_seconds, 1);
  ASSERT_EQ(async.copies.size(), 1u);  // the host copy is a staging buffer no restart can read
  EXPECT_EQ(async.copies[0].tier, Tier::shared);
  EXPECT_DOUBLE_EQ(async.copies[0].ready_seconds, 45);  // 30 s alone, 1.5 x beside the steps
  EXPECT_DOUBLE_EQ(async.shared_seconds_per_save, 45);
  EXPECT_DOUBLE_EQ(async.peer_seconds_per_save, 0);

  c.mode = CheckpointMode::in_memory;
  c.peer_replicas = 1;
  c.persist_every = 4;
  const SavePhases in_memory = save_phases(c, cost, 1);
  ASSERT_EQ(in_memory.copies.size(), 3u);
  EXPECT_EQ(in_memory.copies[0].tier, Tier::host_memory);  // held by an agent outside the training processes
  EXPECT_EQ(in_memory.copies[1].tier, Tier::peer_memory);
  EXPECT_DOUBLE_EQ(in_memory.copies[1].ready_seconds, 5);
  EXPECT_DOUBLE_EQ(in_memory.copies[2].ready_seconds, 35);  // after the peer copies
  EXPECT_EQ(in_memory.copies[2].every_saves, 4);
  EXPECT_DOUBLE_EQ(in_memory.peer_seconds_per_save, 5);
  EXPECT_DOUBLE_EQ(in_memory.shared_seconds_per_save, 30.0 / 4);
  EXPECT_DOUBLE_EQ(in_memory.background_seconds(), 35);
}

TEST(SavePhases, IncrementalSavesWriteWhatChangedSinceTheSaveBefore) {
  EXPECT_DOUBLE_EQ(changed_fraction(0.1, 1), 0.1);
  EXPECT_NEAR(changed_fraction(0.1, 2), 0.19, 1e-15);
  EXPECT_EQ(changed_fraction(1, 7), 1);
  CheckpointConfig c;
  c.incremental = {4, 0.1};
  const SavePhases p = save_phases(c, cost_by_hand(), 2);
  EXPECT_NEAR(p.save_fraction, (1 + 3 * 0.19) / 4, 1e-15);    // one full save, three of 19 %
  EXPECT_NEAR(p.restore_fraction, 1 + 0.19 * 1.5, 1e-15);     // the full one and on average 1.5 increments
  EXPECT_NEAR(p.blocking_seconds, 30 * p.save_fraction, 1e-12);
  EXPECT_NEAR(p.copies.back().read_seconds, 20 * p.restore_fraction, 1e-12);
}

TEST(CheckpointTimeline, AsyncSavesBlockOnlyForTheHostCopy) {
  RunModel m = async_by_hand();
  const RunResult r = simulate_run(m, 1, true);
  EXPECT_DOUBLE_EQ(r.wall_seconds, 20 * 10 + 4 * 1);
  EXPECT_DOUBLE_EQ(r.checkpoint_seconds, 4);
  int persists = 0;
  for (const RunEvent& e : r.events)
    if (e.kind == "persist") {
      EXPECT_DOUBLE_EQ(e.end_seconds - e.start_seconds, 20);
      if (persists++ == 0) EXPECT_DOUBLE_EQ(e.start_seconds, 51);
    }
  EXPECT_EQ(persists, 4);
}

TEST(CheckpointTimeline, ASwitchFailureRestoresFromHostMemory) {
  const RunResult r = failing_at(async_by_hand(), 110, Component::switch_);  // the nodes stay
  EXPECT_EQ(r.restores.at("host memory"), 1);
  EXPECT_DOUBLE_EQ(r.lost_seconds, 110 - 102);
  EXPECT_DOUBLE_EQ(r.restart_seconds, 3600 + 2);  // a switch is repaired, then the host copy read
  expect_wall_is_the_sum_of_its_parts(r);
}

TEST(CheckpointTimeline, ALostNodeTakesItsHostCopyWithIt) {
  // At 110 s the second save's shared copy (readable at 122 s) is not there
  // yet: back to the first save's (step 5, blocking part ended at 51 s).
  const RunResult early = failing_at(async_by_hand(), 110, Component::gpu);
  EXPECT_EQ(early.restores.count("host memory"), 0u);
  EXPECT_EQ(early.restores.at("shared storage"), 1);
  EXPECT_DOUBLE_EQ(early.lost_seconds, 110 - 51);
  EXPECT_DOUBLE_EQ(early.restart_seconds, 60 + 120 + 50);
  EXPECT_EQ(early.steps, 20);
  expect_wall_is_the_sum_of_its_parts(early);
  // At 125 s it is: only the work since the second save is lost.
  const RunResult late = failing_at(async_by_hand(), 125, Component::node);
  EXPECT_DOUBLE_EQ(late.lost_seconds, 125 - 102);
  expect_wall_is_the_sum_of_its_parts(late);
}

TEST(CheckpointTimeline, TheTraceShowsSavesPersistsAndRestoresByTier) {
  std::ostringstream trace;
  write_run_trace(trace, failing_at(async_by_hand(), 110, Component::gpu));
  const std::string text = trace.str();
  EXPECT_NE(text.find(R"("tid":1,"name":"persist","ts":51000000,"dur":20000000,"args":{"detail":"shared storage, step 5"})"),
            std::string::npos) << text;
  EXPECT_NE(text.find(R"("name":"checkpoint","ts":50000000,"dur":1000000)"), std::string::npos);
  EXPECT_NE(text.find("load the checkpoint from shared storage"), std::string::npos);
  EXPECT_NE(text.find("background checkpoint copies"), std::string::npos);
}

TEST(CheckpointTimeline, APeerReplicaSurvivesTheLostNode) {
  RunModel m = async_by_hand();
  m.copies = {{Tier::host_memory, 0, 2, 1}, {Tier::peer_memory, 5, 4, 1}, {Tier::shared, 25, 50, 2}};
  const RunResult r = failing_at(m, 110, Component::gpu);  // the peer copy of step 10 is there since 107 s
  EXPECT_EQ(r.restores.at("peer host memory"), 1);
  EXPECT_DOUBLE_EQ(r.lost_seconds, 110 - 102);
  EXPECT_DOUBLE_EQ(r.restart_seconds, 60 + 120 + 4);
  expect_wall_is_the_sum_of_its_parts(r);
}

TEST(CheckpointTimeline, PersistTrafficSlowsTheStepsAfterASave) {
  RunModel m = async_by_hand();
  m.steps = 10;
  m.persist_step_seconds = 12;      // a step beside the copies
  m.persist_slowdown_seconds = 3;   // in all, per save: the next step 2 s slower, the one after 1 s
  const RunResult r = simulate_run(m, 1);
  EXPECT_DOUBLE_EQ(r.persist_seconds, 3);  // the last save has no steps after it
  EXPECT_DOUBLE_EQ(r.wall_seconds, 10 * 10 + 2 * 1 + 3);
  EXPECT_DOUBLE_EQ(failure_free_seconds(m), r.wall_seconds);
  m.sources = {{Component::gpu, 1.0 / 300, true}, {Component::switch_, 1.0 / 900, true}};
  m.steps = 2000;
  for (uint64_t seed = 0; seed < 20; ++seed) expect_wall_is_the_sum_of_its_parts(simulate_run(m, seed));
}

TEST(CheckpointConfig, ReadsModesTiersAndIncrementalSaves) {
  nlohmann::json doc = fixtures::scenario_json(1, 1, 2, 2, "1f1b");
  doc["checkpoint"] = {{"mode", "in_memory"},
                       {"peer_replicas", 2},
                       {"persist_every", 3},
                       {"tiers",
                        {{{"kind", "host_memory"}, {"capacity_GB", 2048}},
                         {{"kind", "local_disk"}, {"write_GBps", 8}, {"read_GBps", 12}, {"keep", 2}},
                         {{"kind", "shared"}, {"write_GBps", 100}, {"read_GBps", 300}}}},
                       {"incremental", {{"full_every", 5}, {"changed_fraction_per_step", 0.25}}}};
  const CheckpointConfig c = fixtures::scenario_from(doc).run.checkpoint;
  EXPECT_EQ(c.mode, CheckpointMode::in_memory);
  EXPECT_EQ(c.peer_replicas, 2);
  EXPECT_EQ(c.persist_every, 3);
  ASSERT_EQ(c.node_tiers.size(), 2u);
  EXPECT_EQ(c.node_tiers[0].kind, StorageKind::host_memory);
  EXPECT_DOUBLE_EQ(c.node_tiers[0].capacity_bytes, 2048e9);
  EXPECT_DOUBLE_EQ(c.node_tiers[1].write_bytes_per_second, 8e9);
  EXPECT_EQ(c.node_tiers[1].keep, 2);
  EXPECT_DOUBLE_EQ(c.storage_write_bytes_per_second, 100e9);
  EXPECT_DOUBLE_EQ(c.storage_read_bytes_per_second, 300e9);
  EXPECT_EQ(c.incremental.full_every, 5);
  EXPECT_DOUBLE_EQ(c.incremental.changed_fraction_per_step, 0.25);
}

TEST(CheckpointConfig, RefusesWhatAModeCannotDo) {
  auto error = [](const nlohmann::json& checkpoint) {
    nlohmann::json doc = fixtures::scenario_json(1, 1, 2, 2, "1f1b");
    doc["checkpoint"] = checkpoint;
    return fixtures::scenario_error(doc);
  };
  EXPECT_EQ(error({{"peer_replicas", 1}}),
            "test.json: checkpoint.peer_replicas: peer replicas are kept by mode in_memory only (this checkpoint's "
            "mode is sync)");
  EXPECT_EQ(error({{"persist_every", 2}}),
            "test.json: checkpoint.persist_every: a sync save always reaches the shared storage: persist_every needs "
            "mode async or in_memory");
  EXPECT_EQ(error({{"tiers", {{{"kind", "local_disk"}}}}}),
            "test.json: checkpoint.tiers[0].write_GBps: missing: a local disk's bandwidth per node has no default");
  EXPECT_EQ(error({{"storage_write_GBps", 5}, {"tiers", {{{"kind", "shared"}}}}}),
            "test.json: checkpoint.tiers[0].kind: the shared storage is given twice: here and in "
            "checkpoint.storage_*_GBps");
  EXPECT_EQ(error({{"incremental", {{"changed_fraction_per_step", 2}}}}),
            "test.json: checkpoint.incremental.changed_fraction_per_step: a fraction of the checkpoint's bytes: at "
            "most 1");
  EXPECT_NE(error({{"mode", "lazy"}}).find("checkpoint.mode"), std::string::npos);
}

TEST(CheckpointConfig, RefusesAHostMemoryTooSmallForWhatItKeeps) {
  nlohmann::json doc = fixtures::scenario_json(1, 1, 2, 2, "1f1b");
  doc["checkpoint"] = {{"mode", "async"}, {"every_steps", 10}, {"tiers", {{{"kind", "host_memory"}, {"capacity_GB", 1e-6}}}}};
  TrainRequest request;
  request.steps = 20;
  request.no_failures = true;
  const std::string error = fixtures::input_error_of([&] { plan_training(fixtures::scenario_from(doc), request); });
  EXPECT_EQ(error.rfind("test.json: checkpoint.tiers (host_memory).capacity_GB: 0.0 GB cannot hold 1 checkpoint(s) of "
                        "the fullest node (", 0),
            0u)
      << error;
}

namespace {

// TP 1 x PP 2 x DP 4 on four nodes of two GPUs, one 100 Gb/s NIC each: the
// data-parallel rings cross the NICs the checkpoint copies leave through.
nlohmann::json four_nodes(const nlohmann::json& checkpoint) {
  nlohmann::json doc = fixtures::scenario_json(1, 2, 4, 4, "1f1b");
  doc["cluster"]["topology"] = {{"gpus_per_node", 2},      {"nvlink_GBps", 450},  {"nics_per_node", 1},
                                {"nic_Gbps", 100},         {"rail_optimized", false}, {"nodes_per_unit", 4},
                                {"units_per_pod", 1}};
  doc["reliability"] = {{"gpu_mtbf_hours", 0.5}, {"spare_nodes", 1}};  // a failure every 3.75 minutes
  doc["checkpoint"] = checkpoint;
  return doc;
}

TrainPlan plan_for(const nlohmann::json& checkpoint) {
  TrainRequest request;
  request.steps = 20000;
  request.runs = 5;
  return plan_training(fixtures::scenario_from(four_nodes(checkpoint)), request);
}

double mean_goodput(const TrainPlan& plan) {
  double sum = 0;
  for (const RunResult& r : plan.runs) sum += r.goodput() / plan.runs.size();
  return sum;
}

}  // namespace

TEST(CheckpointTrain, AsyncSavesToHostMemoryBeatSyncSavesAndTheirPersistSlowsTheStep) {
  const nlohmann::json storage = {{"storage_write_GBps", 1000}, {"storage_read_GBps", 1000}};  // the NICs bind
  const TrainPlan sync = plan_for(storage);
  nlohmann::json async_checkpoint = storage;
  async_checkpoint["mode"] = "async";
  const TrainPlan async = plan_for(async_checkpoint);
  EXPECT_LT(async.model.checkpoint_write_seconds, sync.model.checkpoint_write_seconds / 10);
  // Beside the step's rings the copies take longer, and the step replayed beside them is slower.
  EXPECT_GT(async.interference.shared.stretch, 1);
  EXPECT_GT(async.interference.shared.nic_share, 0);
  EXPECT_GT(async.interference.shared.step_seconds, async.model.step_seconds);
  EXPECT_EQ(async.interference.peers.nic_share, 0);
  EXPECT_GT(async.model.persist_slowdown_seconds, 0);
  EXPECT_GT(mean_goodput(async), mean_goodput(sync));
  // GPU failures replace a node: its host copy is gone, restores read the shared storage.
  EXPECT_EQ(async.runs[0].restores.count("host memory"), 0u);
  EXPECT_GT(async.runs[0].restores.at("shared storage"), 0);
  const std::string text = to_text(async);
  EXPECT_NE(text.find("persist beside steps"), std::string::npos) << text;
  EXPECT_NE(text.find("restores (mean)"), std::string::npos) << text;
}

TEST(CheckpointTrain, InMemorySavesRestoreALostNodeFromAPeer) {
  const TrainPlan plan = plan_for({{"mode", "in_memory"}, {"peer_replicas", 1}, {"persist_every", 4}});
  ASSERT_EQ(plan.model.copies.size(), 3u);
  EXPECT_EQ(plan.model.copies[1].tier, Tier::peer_memory);
  EXPECT_GT(plan.runs[0].restores.at("peer host memory"), 0);
}

TEST(CheckpointTrain, RanksPoliciesByGoodput) {
  TrainRequest request;
  request.steps = 20000;
  request.runs = 2;
  request.checkpoint_policies = true;
  const TrainPlan plan = plan_training(fixtures::scenario_from(four_nodes(nlohmann::json::object())), request);
  ASSERT_EQ(plan.policies.size(), 12u);  // sync, async, in-memory (shared storage every save or every 4th), x 0.5, 1, 2
  for (size_t i = 1; i < plan.policies.size(); ++i) EXPECT_GE(plan.policies[i - 1].goodput, plan.policies[i].goodput);
  EXPECT_NE(plan.policies[0].mode, CheckpointMode::sync);
  EXPECT_NE(to_text(plan).find("checkpoint policies (5 runs each)"), std::string::npos);
}
