// The SimGrid replay against closed forms: pipeline bubbles with free
// communication, lone collectives on uniform links, contention on a shared
// NIC; and the laws every replay obeys (each task once, dependencies kept).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include <gtest/gtest.h>

#include "sim/engine/compute_interference.hpp"
#include "sim/engine/platform_file.hpp"
#include "sim/engine/replay.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/network/collective_plan.hpp"
#include "sim/program/program_builder.hpp"
#include "program_laws.hpp"
#include "sim/step/report.hpp"
#include "test_support.hpp"

using namespace simtrain;
using simtrain::fixtures::lone_collective;
using simtrain::fixtures::one_gpu_per_node;
using simtrain::fixtures::ring_seconds;

namespace {

struct StageTimes {
  double forward, backward, weight;
};

// Durations by pass, whatever the ops: every stage costs the same.
std::vector<double> uniform_durations(const Program& p, StageTimes t) {
  std::vector<double> seconds;
  for (const Work& w : p.works) {
    const char kind = w.name[0];
    seconds.push_back(kind == 'F' ? t.forward : kind == 'B' ? t.backward : kind == 'W' ? t.weight : 0.0);
  }
  return seconds;
}

Timeline replay_uniform(const std::string& schedule, int p, int m, int v, StageTimes t) {
  nlohmann::json doc = fixtures::scenario_json(1, p, 1, p * v * 2, schedule, v > 1 ? 2 : 0, m);
  doc["model"]["tie_word_embeddings"] = false;
  const Scenario s = fixtures::scenario_from(doc);
  const Program program = build_program(s, build_workload(s));
  ReplayOptions options;
  options.free_communication = true;
  return replay(program, Fabric(s.cluster.topology, program.world_size), uniform_durations(program, t), options);
}

// The tasks of `rank` on `stream`, in issue order.
std::vector<int> stream_tasks(const Program& p, int rank, Stream stream) {
  std::vector<int> ids;
  for (int id : p.rank_tasks(rank))
    if (p.tasks[id].stream == stream) ids.push_back(id);
  return ids;
}

// When task `id` could start on its own rank: its dependencies and the task before it on its stream have ended.
double own_ready_seconds(const Program& p, const Timeline& timeline, int id) {
  double ready = 0;
  for (int dep : p.deps(id)) ready = std::max(ready, timeline.tasks[dep].end);
  const std::vector<int> stream = stream_tasks(p, p.tasks[id].rank, p.tasks[id].stream);
  const auto it = std::find(stream.begin(), stream.end(), id);
  if (it != stream.begin()) ready = std::max(ready, timeline.tasks[*std::prev(it)].end);
  return ready;
}

}  // namespace

TEST(Replay, GpipeAnd1f1bTakeTheClosedFormTimeWithFreeCommunication) {
  for (const std::string schedule : {"gpipe", "1f1b"})
    for (int p : {1, 2, 4})
      for (int m : {1, 4, 8}) {
        const StageTimes t{1.5e-3, 3.1e-3, 0};
        const Timeline timeline = replay_uniform(schedule, p, m, 1, t);
        const double expected = (m + p - 1) * (t.forward + t.backward);
        EXPECT_NEAR(timeline.step_seconds / expected, 1.0, 1e-9) << schedule << " p" << p << " m" << m;
      }
}

TEST(Replay, BubbleFractionIsPMinusOneOverMPlusPMinusOne) {
  const int p = 4, m = 8;
  nlohmann::json doc = fixtures::scenario_json(1, p, 1, 8, "1f1b", 0, m);
  doc["model"]["tie_word_embeddings"] = false;
  const Scenario s = fixtures::scenario_from(doc);
  const Program program = build_program(s, build_workload(s));
  ReplayOptions options;
  options.free_communication = true;
  const Timeline timeline =
      replay(program, Fabric(s.cluster.topology, 4), uniform_durations(program, {1e-3, 2e-3, 0}), options);
  for (int rank = 0; rank < p; ++rank) {
    const TimeSplit split = split_rank_time(program, timeline, rank, timeline.step_seconds);
    EXPECT_NEAR(split.idle_seconds / timeline.step_seconds, (p - 1.0) / (m + p - 1), 1e-9) << "rank " << rank;
    EXPECT_NEAR(split.compute_seconds + split.exposed_seconds() + split.idle_seconds, timeline.step_seconds, 1e-12);
  }
}

TEST(Replay, InterleavingDividesTheBubbleByTheVirtualStages) {
  for (int p : {2, 4})
    for (int v : {2, 3})
      for (int m : {p, 2 * p, 4 * p}) {
        const StageTimes t{2e-3 / v, 4e-3 / v, 0};  // a rank's v chunks together cost 2 ms + 4 ms
        const Timeline timeline = replay_uniform("interleaved_1f1b", p, m, v, t);
        const double ideal = m * 6e-3;
        const double expected = ideal + (p - 1) * 6e-3 / v;
        EXPECT_NEAR(timeline.step_seconds / expected, 1.0, 1e-9) << "p" << p << " v" << v << " m" << m;
        EXPECT_NEAR((timeline.step_seconds - ideal) / ideal, (p - 1.0) / (v * m), 1e-9);
      }
}

TEST(Replay, ZeroBubbleH1LeavesBubbleOfPMinusOneTimesFPlusBMinusW) {
  for (int p : {2, 4})
    for (int m : {p, 2 * p, 3 * p}) {
      const StageTimes t{1e-3, 1e-3, 1e-3};
      const Timeline timeline = replay_uniform("zb_h1", p, m, 1, t);
      const double expected = m * 3e-3 + (p - 1) * (t.forward + t.backward - t.weight);
      EXPECT_NEAR(timeline.step_seconds / expected, 1.0, 1e-9) << "p" << p << " m" << m;
    }
}

TEST(Replay, LoneRingCollectivesMatchTheClosedForm) {
  const double bandwidth = 25e9, hop_latency = 2e-6, bytes = 256e6;
  for (TaskKind kind : {TaskKind::ALLREDUCE, TaskKind::REDUCESCATTER, TaskKind::ALLGATHER})
    for (int n : {2, 4, 8, 16}) {
      const Program p = lone_collective(n, kind, bytes, CommDim::dp);
      ReplayOptions options;
      options.allreduce_algorithm = Algorithm::ring;
      const Timeline t = replay(p, Fabric(one_gpu_per_node(25, hop_latency), n), {}, options);
      // A GPU-to-GPU step crosses two NIC hops.
      const double expected = ring_seconds(kind, n, bytes, bandwidth, 2 * hop_latency);
      EXPECT_NEAR(t.step_seconds / expected, 1.0, 0.01) << to_string(kind) << " n" << n;
      EXPECT_EQ(t.flows, static_cast<uint64_t>(n));
    }
}

TEST(Replay, LoneRingAllReduceAroundATorusRingMatchesTheClosedForm) {
  const double bandwidth = 40e9, hop_latency = 1.5e-6, bytes = 256e6;
  for (int n : {2, 3, 4, 8}) {
    Topology t;
    t.kind = TopologyKind::torus;
    t.gpus_per_node = 1;
    t.nvlink_bytes_per_second = 1e12;  // the GPU's port into its router: never the bottleneck
    t.torus_dims = {n};
    t.torus_link_bytes_per_second = bandwidth;
    t.torus_link_latency_seconds = hop_latency;
    const Program p = lone_collective(n, TaskKind::ALLREDUCE, bytes, CommDim::dp);
    ReplayOptions options;
    options.allreduce_algorithm = Algorithm::ring;
    const Timeline timeline = replay(p, Fabric(t, n), {}, options);
    // Ring neighbours are one torus hop apart, the last rank's wrapping around to rank 0.
    const double expected = ring_seconds(TaskKind::ALLREDUCE, n, bytes, bandwidth, hop_latency);
    EXPECT_NEAR(timeline.step_seconds / expected, 1.0, 0.01) << "n" << n;
    EXPECT_EQ(timeline.flows, static_cast<uint64_t>(n));
  }
}

// A lone all-to-all: (n-1)/n of every rank's buffer S leaves over the
// rank's own links, so t = (n-1)/n S / B + latency and nccl-tests' busbw,
// (n-1)/n S / t, is the per-rank bandwidth B; across nodes the chunks for
// the rank's own node and for the others leave over different links.
TEST(Replay, LoneAllToAllMatchesTheClosedForm) {
  const double bytes = 256e6;
  const auto replayed = [&](const Topology& topology, int n) {
    const Timeline t = replay(lone_collective(n, TaskKind::ALLTOALL, bytes, CommDim::dp), Fabric(topology, n), {}, {});
    // Flow by flow: each rank's n - 1 flows, those alike going as one transfer.
    EXPECT_EQ(t.closed_form_collectives, 0u);
    EXPECT_GE(t.flows, static_cast<uint64_t>(n)) << "n" << n;
    EXPECT_LE(t.flows, static_cast<uint64_t>(n * (n - 1))) << "n" << n;
    return t.step_seconds;
  };
  Topology node = one_gpu_per_node(50, 2e-6);
  node.gpus_per_node = 8;
  node.nics_per_node = 8;
  node.nvlink_bytes_per_second = 450e9;
  node.nvlink_latency_seconds = 1e-6;
  // One node: every chunk crosses the GPU's NVSwitch port, two NVLink hops.
  EXPECT_NEAR(replayed(node, 8) / (7.0 / 8 * bytes / 450e9 + 2e-6), 1.0, 0.01);
  // Two nodes: a rank's 7 chunks for its own node take NVLink, the 8 for the
  // other node its NIC (two NIC hops, crossing rails through the leaves,
  // which are as wide as the NICs under them), the slower.
  node.nodes_per_unit = 2;
  const double two_nodes_seconds = std::max(7.0 / 16 * bytes / 450e9, 8.0 / 16 * bytes / 50e9) + 4e-6;
  EXPECT_NEAR(replayed(node, 16) / two_nodes_seconds, 1.0, 0.01);
  // One GPU a node: everything over the NIC.
  for (int n : {2, 4, 8})
    EXPECT_NEAR(replayed(one_gpu_per_node(25, 2e-6), n) / ((n - 1.0) / n * bytes / 25e9 + 4e-6), 1.0, 0.01)
        << "n" << n;
}

// An expert group's all-to-all whose links are its own, where max-min
// sharing makes the closed form exact (closed_form_is_exact), is timed by it
// on every lane; the flow-level replay (ReplayOptions::flow_level) sends
// its n (n - 1) flows and ends within 0.1 %, on each kind of topology.
// (The closed form pays the slowest route's latency; flows on shorter
// routes start their bytes earlier: on the torus ring it is 1.5 us over.)
TEST(Replay, ExactAllToAllClosedFormsMatchTheFlowLevelReplayOnEveryTopologyKind) {
  const double bytes = 256e6;
  Topology node = one_gpu_per_node(50, 2e-6);  // 8 GPUs a node, a rail-optimised NIC each
  node.gpus_per_node = 8;
  node.nics_per_node = 8;
  node.nvlink_bytes_per_second = 450e9;
  node.nvlink_latency_seconds = 1e-6;
  Topology two_nodes = node;
  two_nodes.nodes_per_unit = 2;
  Topology torus;  // a ring of 4 nodes of one GPU
  torus.kind = TopologyKind::torus;
  torus.gpus_per_node = 1;
  torus.nvlink_bytes_per_second = 1e12;
  torus.torus_dims = {4};
  torus.torus_link_bytes_per_second = 40e9;
  torus.torus_link_latency_seconds = 1.5e-6;
  Topology dragonfly;  // one group of two routers, two nodes of one GPU on each
  dragonfly.kind = TopologyKind::dragonfly;
  dragonfly.gpus_per_node = 1;
  dragonfly.nics_per_node = 1;
  dragonfly.nvlink_bytes_per_second = 1e12;
  dragonfly.nic_bytes_per_second = 25e9;
  dragonfly.nic_latency_seconds = 1e-6;
  dragonfly.dragonfly_groups = 1;
  dragonfly.routers_per_group = 2;
  dragonfly.nodes_per_router = 2;
  dragonfly.local_link_bytes_per_second = 100e9;  // wider than the two NICs' flows that cross it
  dragonfly.local_link_latency_seconds = 1e-6;
  const Topology platform = with_platform_routes(
      topology_from_json(std::string(SIMTRAIN_SOURCE_DIR) + "/tests/data/four-gpus-one-switch.xml", "test.json",
                         "cluster.topology", "."),
      4);
  for (const auto& [name, topology, n] : {std::tuple{"one NVLink node", node, 8}, {"two nodes", two_nodes, 16},
                                          {"one GPU a node", one_gpu_per_node(25, 2e-6), 4}, {"torus ring", torus, 4},
                                          {"dragonfly", dragonfly, 4}, {"platform file", platform, 4}}) {
    const Program p = lone_collective(n, TaskKind::ALLTOALL, bytes, CommDim::ep);
    const Fabric fabric(topology, n);
    std::vector<int> ranks(n);
    std::iota(ranks.begin(), ranks.end(), 0);
    ASSERT_TRUE(closed_form_is_exact(alltoall_plan(ranks, bytes, 1, fabric), fabric)) << name;
    ReplayOptions flow_level;
    flow_level.flow_level = true;
    const Timeline closed = replay(p, fabric, {}, {}), flows = replay(p, fabric, {}, flow_level);
    EXPECT_EQ(closed.closed_form_collectives, static_cast<uint64_t>(n)) << name;  // one a lane
    EXPECT_EQ(closed.flows, 0u) << name;
    EXPECT_EQ(flows.closed_form_collectives, 0u) << name;
    EXPECT_GT(flows.flows, 0u) << name;
    EXPECT_NEAR(closed.step_seconds / flows.step_seconds, 1.0, 1e-3) << name;
    // Both put the same bytes on the busiest links.
    ASSERT_FALSE(closed.busiest_links.empty()) << name;
    EXPECT_EQ(closed.busiest_links.front().link, flows.busiest_links.front().link) << name;
    EXPECT_DOUBLE_EQ(closed.busiest_links.front().bytes, flows.busiest_links.front().bytes) << name;
  }
}

TEST(Replay, IsolatedTensorParallelGroupsUseTheSameClosedFormWithoutFlows) {
  Topology node = one_gpu_per_node(25, 2e-6);
  node.gpus_per_node = 8;
  node.nics_per_node = 8;
  node.nvlink_bytes_per_second = 450e9;
  node.nvlink_latency_seconds = 1e-6;
  const Program p = lone_collective(8, TaskKind::ALLREDUCE, 64e6, CommDim::tp);
  ReplayOptions options;
  options.allreduce_algorithm = Algorithm::ring;
  const Timeline t = replay(p, Fabric(node, 8), {}, options);
  EXPECT_NEAR(t.step_seconds / ring_seconds(TaskKind::ALLREDUCE, 8, 64e6, 450e9, 2e-6), 1.0, 1e-9);
  EXPECT_EQ(t.closed_form_collectives, 1u);
  EXPECT_EQ(t.flows, 0u);
}

namespace {

// A 1F1B Program of p stages and m micro-batches, transfers as `p2p` says,
// replayed with forwards of t.forward and backwards of t.backward on one GPU
// per node behind NICs of `nic_GBps` (hop latency `hop_seconds`), where a
// lone transfer takes c = bytes / bandwidth + 2 hops' latency and nothing
// else communicates.
struct TransferReplay {
  Program program;
  Timeline timeline;
  double transfer_seconds;  // c
};

TransferReplay replay_1f1b_with_transfers(int p, int m, StageTimes t, double nic_GBps, double hop_seconds,
                                          const std::string& p2p = "paired", const std::string& schedule = "1f1b") {
  nlohmann::json doc = fixtures::scenario_json(1, p, 1, 2 * p, schedule, 0, m);
  doc["model"]["tie_word_embeddings"] = false;
  doc["parallelism"]["p2p_communication"] = p2p;
  const Scenario s = fixtures::scenario_from(doc);
  const Workload workload = build_workload(s);
  TransferReplay r{build_program(s, workload), {}, 0};
  r.timeline = replay(r.program, Fabric(one_gpu_per_node(nic_GBps, hop_seconds), r.program.world_size),
                      uniform_durations(r.program, t), {});
  r.transfer_seconds = workload.stage_boundary_bytes / (nic_GBps * 1e9) + 2 * hop_seconds;
  return r;
}

// The makespan of 1F1B with paired transfers (Megatron's blocking calls:
// send_forward / recv_forward alone in warm-up, send_forward_recv_backward
// and send_backward_recv_forward in the steady state, recv_backward /
// send_backward alone in cool-down), p stages of forward t_f and backward
// t_b, each transfer taking c once both its sides are posted, c <= min(t_f,
// t_b), nothing else costing time. It is (m + p - 1)(t_f + t_b) + k c, k the
// transfers on the critical path:
//   p = 1: none, k = 0.
//   m = 1: micro-batch 0's forward down the pipeline and its backward back
//     up, each stage's call meeting a peer already posted: k = 2(p - 1).
//   p = 2: stage 0 sends no gradient and stage 1 no activations, so each
//     runs one call per micro-batch: F0 on stage 0, c, stage 1's m forward
//     and backward pairs with a call c between pairs, c, B_{m-1} on stage 0:
//     k = m + 1.
//   p >= 3, m >= 3: micro-batch 0's forward down the pipeline (p t_f +
//     (p - 1) c); its backward on stage p-1, c, its backward on stage p-2
//     (2 t_b + c); then stage p-2's steady state, whose calls [send B_i,
//     receive F_{i+2}] and [send F_{i+2}, receive B_{i+1}] take c each, its
//     peers having posted first (stage p-1 after its forward and backward,
//     stage p-3 a step ahead): forwards F_2..F_{m-1} and backwards
//     B_1..B_{m-2}, a call before each ((m - 2) t_f + (m - 3) t_b + (2m - 5) c);
//     c and F_{m-1}, B_{m-1} on stage p-1 (t_f + t_b + c); and B_{m-1} back up
//     to stage 0 ((p - 1)(t_b + c)). Sums: m + p - 1 forwards and backwards,
//     k = 2m + 2p - 5.
//   p >= 3, m = 2: micro-batch 0 down ((p t_f + (p - 1) c), B0 on stage p-1,
//     c for F1's input, F1 and B1 there, B1 back up: k = 2p - 1, the same
//     2m + 2p - 5.
// With c > min(t_f, t_b) a peer posts late in the steady state and another
// path binds.
int transfers_on_critical_path(int p, int m) {
  if (p == 1) return 0;
  if (m == 1) return 2 * (p - 1);
  if (p == 2) return m + 1;
  return 2 * m + 2 * p - 5;
}

double mean_exposed_pp_seconds(const Program& program, const Timeline& timeline) {
  double total = 0;
  for (int rank = 0; rank < program.world_size; ++rank)
    total += split_rank_time(program, timeline, rank, timeline.step_seconds).exposed_pp_seconds;
  return total / program.world_size;
}

}  // namespace

TEST(Replay, PairedTransfersGive1f1bItsClosedFormWithTransferTime) {
  const StageTimes t{1.5e-3, 3.1e-3, 0};
  for (double nic_GBps : {1.0, 0.375})  // c = 0.53 ms and 1.40 ms: below t_f = 1.5 ms
    for (int p : {1, 2, 3, 4, 5})
      for (int m : {1, 2, 3, 4, 8}) {
        const TransferReplay r = replay_1f1b_with_transfers(p, m, t, nic_GBps, 1e-6);
        ASSERT_LE(r.transfer_seconds, std::min(t.forward, t.backward));
        const double expected =
            (m + p - 1) * (t.forward + t.backward) + transfers_on_critical_path(p, m) * r.transfer_seconds;
        EXPECT_NEAR(r.timeline.step_seconds / expected, 1.0, 1e-9) << "p" << p << " m" << m << " c " << r.transfer_seconds;
      }
}

TEST(Replay, ALoneTransferTakesItsBytesOverTheNicAndTwoHops) {
  const TransferReplay r = replay_1f1b_with_transfers(2, 1, {0, 0, 0}, 1.0, 1e-6);
  // F0 on stage 0 (no time), its activations to stage 1, B0 (no time), its gradient back: two transfers.
  EXPECT_NEAR(r.timeline.step_seconds / (2 * r.transfer_seconds), 1.0, 1e-9);
}

TEST(Replay, PairedExposedPipelineTimeGrowsWithPipelineDepth) {
  const StageTimes t{1.5e-3, 3.1e-3, 0};
  double paired_before = 0;
  for (int p : {2, 4, 8}) {
    const TransferReplay paired = replay_1f1b_with_transfers(p, 16, t, 1.0, 1e-6);
    const TransferReplay eager = replay_1f1b_with_transfers(p, 16, t, 1.0, 1e-6, "eager");
    const double exposed = mean_exposed_pp_seconds(paired.program, paired.timeline);
    EXPECT_GT(exposed, paired_before) << "p" << p;
    // Waiting for the receiver to post only delays a transfer.
    EXPECT_GE(paired.timeline.step_seconds, eager.timeline.step_seconds * (1 - 1e-12)) << "p" << p;
    paired_before = exposed;
  }
}

TEST(Replay, PairedTransfersRunEachTaskOnceAndReceiveWhatIsSent) {
  for (const std::string schedule : {"gpipe", "1f1b"})
    for (int p : {2, 4}) {
      SCOPED_TRACE(schedule + " p" + std::to_string(p));
      const TransferReplay r = replay_1f1b_with_transfers(p, 8, {1e-3, 2e-3, 1e-3}, 1.0, 1e-6, "paired", schedule);
      double sent = 0, received = 0;
      for (const Task& task : r.program.tasks) {
        EXPECT_TRUE(r.timeline.tasks[task.id].ran()) << task_name(r.program, task);
        if (task.kind == TaskKind::SEND) sent += task.bytes;
        if (task.kind == TaskKind::RECV) received += task.bytes;
      }
      EXPECT_EQ(r.timeline.tasks_stood_for, r.program.tasks.size());
      EXPECT_EQ(sent, received);
      EXPECT_GT(sent, 0);
    }
}

TEST(Replay, TwoTransfersThroughOneNicShareItsBandwidth) {
  // Ranks 0 and 1 share node 0; they send to ranks 2 and 3 on node 1.
  for (int nics : {1, 2}) {
    Topology t = one_gpu_per_node(50, 1e-6);
    t.gpus_per_node = 2;
    t.nics_per_node = nics;
    Program p;
    p.world_size = 4;
    p.coords.resize(4);
    std::vector<std::vector<int>> rank_tasks(4);
    for (int sender : {0, 1}) {
      Task send;
      send.rank = sender;
      send.stream = Stream::p2p;
      send.kind = TaskKind::SEND;
      send.dim = CommDim::pp;
      send.peer = sender + 2;
      send.bytes = 1e9;
      send.id = p.add_task(send);
      rank_tasks[sender].push_back(send.id);
      Task recv = send;
      recv.rank = sender + 2;
      recv.kind = TaskKind::RECV;
      recv.peer = sender;
      rank_tasks[sender + 2].push_back(p.add_task(recv, std::vector<int>{send.id}));
    }
    p.set_rank_tasks(rank_tasks);
    const Timeline timeline = replay(p, Fabric(t, 4), {}, {});
    const double expected = (nics == 1 ? 2 : 1) * 1e9 / 50e9 + 2e-6;
    EXPECT_NEAR(timeline.step_seconds / expected, 1.0, 1e-6) << nics << " NICs";
    EXPECT_EQ(timeline.tasks[1].end, timeline.tasks[0].end);  // a receive ends with its send
  }
}

TEST(Replay, EveryTaskRunsOnceAfterItsDependencies) {
  for (const std::string schedule : {"gpipe", "1f1b", "zb_h1", "interleaved_1f1b"})
    for (int tp : {1, 2})
      for (int pp : {2, 4})
        for (int dp : {1, 2}) {
          nlohmann::json doc = fixtures::scenario_json(tp, pp, dp, 8, schedule, schedule == "interleaved_1f1b" ? 1 : 0, 8);
          doc["parallelism"]["zero_stage"] = dp == 2 ? 1 : 0;
          const Scenario s = fixtures::scenario_from(doc);
          const Simulation sim = simulate(s);
          SCOPED_TRACE(schedule + " tp" + std::to_string(tp) + " pp" + std::to_string(pp) + " dp" + std::to_string(dp));
          for (const Task& t : sim.program.tasks) {
            const TaskTiming& timing = sim.timeline.tasks[t.id];
            ASSERT_GE(timing.start, 0) << task_name(sim.program, t);
            ASSERT_GE(timing.end, timing.start) << task_name(sim.program, t);
            if (t.kind == TaskKind::RECV) {
              const TaskTiming& send = sim.timeline.tasks[sim.program.deps(t)[0]];
              if (is_posted_in_order(t)) {  // its send's transfer, not the rest of its batch
                ASSERT_EQ(timing.start, send.start) << task_name(sim.program, t);
                ASSERT_EQ(timing.end, send.end) << task_name(sim.program, t);
              } else {  // spans its send's transfer
                ASSERT_EQ(timing.end, send.end) << task_name(sim.program, t);
              }
              continue;
            }
            for (int dep : sim.program.deps(t)) ASSERT_GE(timing.start + 1e-15, sim.timeline.tasks[dep].end) << task_name(sim.program, t);
          }
          // A stream runs one task at a time, in order; the transfers of a batch together, once
          // the stream reaches the batch, and what follows once the last of them has ended.
          for (int rank = 0; rank < sim.program.world_size; ++rank)
            for (Stream stream : {Stream::compute, Stream::dp, Stream::dp_gather}) {
              double free_at = 0, batch_posted_at = 0;
              for (int id : stream_tasks(sim.program, rank, stream)) {
                const Task& t = sim.program.tasks[id];
                if (!t.joins_batch) batch_posted_at = free_at;
                ASSERT_GE(sim.timeline.tasks[id].start + 1e-15, batch_posted_at) << task_name(sim.program, t);
                free_at = std::max(free_at, sim.timeline.tasks[id].end);
              }
            }
        }
}

// The tied embedding's all-reduce joins the first and the last stage, which
// reach it at different times: it starts when the later one arrives, so the
// earlier one's wait is idle time, not communication.
TEST(Replay, ACollectiveStartsOnceItsWholeGroupHasArrived) {
  ReplayOptions free;
  free.free_communication = true;
  const Simulation sim = simulate(load_scenario("tiny-4gpu"), free);
  const Program& p = sim.program;
  int collectives = 0;
  bool someone_waited = false;
  for (const Group& g : p.groups) {
    if (g.name.rfind("emb", 0) != 0) continue;
    std::vector<std::vector<int>> by_member;
    for (int rank : g.ranks) {
      by_member.emplace_back();
      for (int id : p.rank_tasks(rank))
        if (p.tasks[id].group == g.id) by_member.back().push_back(id);
    }
    for (size_t k = 0; k < by_member.front().size(); ++k) {
      const double start = sim.timeline.tasks[by_member.front()[k]].start;
      for (const std::vector<int>& tasks : by_member) {
        const int id = tasks.at(k);
        EXPECT_EQ(sim.timeline.tasks[id].start, start) << task_name(p, p.tasks[id]);
        EXPECT_EQ(sim.timeline.tasks[id].end, start) << task_name(p, p.tasks[id]);  // free: no time once all are there
        someone_waited = someone_waited || own_ready_seconds(p, sim.timeline, id) < start;
      }
      ++collectives;
    }
  }
  EXPECT_GT(collectives, 0);
  EXPECT_TRUE(someone_waited);
}

TEST(Replay, SameProgramGivesIdenticalTimes) {
  const Scenario s = load_scenario("tiny-4gpu");
  const Simulation a = simulate(s), b = simulate(s);
  ASSERT_EQ(a.timeline.tasks.size(), b.timeline.tasks.size());
  for (size_t i = 0; i < a.timeline.tasks.size(); ++i) {
    EXPECT_EQ(a.timeline.tasks[i].start, b.timeline.tasks[i].start);
    EXPECT_EQ(a.timeline.tasks[i].end, b.timeline.tasks[i].end);
  }
}

TEST(Replay, ReportsProgressAndStopsWhenCancelled) {
  Scenario s = load_scenario("tiny-4gpu", {"global_batch_size=16384"});  // long enough to report progress
  std::atomic<bool> cancel{false};
  std::vector<ReplayProgress> seen;
  ReplayOptions options;
  options.cancel = &cancel;
  options.on_progress = [&](const ReplayProgress& p) {
    seen.push_back(p);
    cancel = true;
  };
  EXPECT_THROW(simulate(s, options), Interrupted);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_GT(seen[0].tasks_done, 0u);
  EXPECT_LT(seen[0].tasks_done, seen[0].tasks_total);
  EXPECT_GT(seen[0].simulated_seconds, 0);
}

// TP 8 without SP: the backward's input-gradient all-reduces hide behind its
// weight-gradient GEMMs where Megatron's async all-reduce is on; the
// exposed TP time drops by at most those all-reduces (the forward's still
// block) and the split still adds up to the step.
TEST(Replay, AsyncTensorParallelAllReducesHideBehindTheBackward) {
  nlohmann::json doc = fixtures::scenario_json(8, 1, 1, 4, "1f1b");
  doc["parallelism"]["async_tensor_model_parallel_allreduce"] = false;
  const Simulation blocking = simulate(fixtures::scenario_from(doc));
  doc["parallelism"]["async_tensor_model_parallel_allreduce"] = true;
  const Simulation async = simulate(fixtures::scenario_from(doc));
  EXPECT_LT(async.report.step_seconds, blocking.report.step_seconds);
  EXPECT_LT(async.report.mean_split.exposed_tp_seconds, blocking.report.mean_split.exposed_tp_seconds);
  EXPECT_GT(async.report.mean_split.exposed_tp_seconds, 0.4 * blocking.report.mean_split.exposed_tp_seconds);
  fixtures::expect_every_ranks_split_adds_up_to_the_step(async.report);
  // The all-reduces beside the weight-gradient GEMMs take NCCL's CTAs from
  // them (sim/engine/compute_interference.hpp): the compute runs longer, at
  // worst as if all of it ran on the SMs left.
  const double nccl_share = compute_interference(fixtures::scenario_from(doc)).nccl_sm_share;
  EXPECT_GT(async.report.mean_split.compute_seconds, blocking.report.mean_split.compute_seconds);
  EXPECT_LT(async.report.mean_split.compute_seconds, blocking.report.mean_split.compute_seconds / (1 - nccl_share));
  doc["parallelism"]["async_tensor_model_parallel_allreduce"] = "yes";
  EXPECT_EQ(fixtures::scenario_error(doc).rfind("test.json: parallelism.async_tensor_model_parallel_allreduce: ", 0), 0u);
}

// tp_comm_overlap (TE's userbuffers), TP 8 with SP: the layers' gathers and
// reduce-scatters (4 a layer forward, 2 backward) leave the compute stream
// for the overlapped one, the same collectives of the same sizes; the
// embedding's and output layer's still block. The step and the exposed TP
// time shrink, the compute stays, and the split still adds up to the step.
TEST(Replay, TpCommOverlapTakesTheLayersCollectivesOffTheComputeStream) {
  nlohmann::json doc = fixtures::scenario_json(8, 1, 1, 4, "1f1b");
  // Layers large enough that the GPU, not the host launching their kernels, sets the pace.
  doc["model"]["hidden_size"] = 4096;
  doc["model"]["num_attention_heads"] = 32;
  doc["model"]["max_position_embeddings"] = 2048;
  doc["training"]["seq_length"] = 2048;
  doc["parallelism"]["sequence_parallel"] = true;
  const Simulation blocking = simulate(fixtures::scenario_from(doc));
  doc["parallelism"]["tp_comm_overlap"] = true;
  const Simulation overlapped = simulate(fixtures::scenario_from(doc));
  const auto tp_collectives = [](const Program& p, bool compute_stream_only) {
    std::map<std::pair<TaskKind, double>, int> counts;
    for (int id : p.rank_tasks(0)) {
      const Task& t = p.tasks[id];
      if (t.dim == CommDim::tp && (!compute_stream_only || t.stream == Stream::compute))
        counts[{t.kind, t.bytes}] += t.count;
    }
    return counts;
  };
  EXPECT_EQ(tp_collectives(overlapped.program, false), tp_collectives(blocking.program, false));
  const auto total = [](const std::map<std::pair<TaskKind, double>, int>& counts) {
    int sum = 0;
    for (const auto& [key, count] : counts) sum += count;
    return sum;
  };
  const int micro_batches = 8, layers = 4;
  EXPECT_EQ(total(tp_collectives(blocking.program, true)) - total(tp_collectives(overlapped.program, true)),
            micro_batches * layers * (4 + 2));
  EXPECT_GT(total(tp_collectives(overlapped.program, true)), 0);
  EXPECT_LT(overlapped.report.step_seconds, blocking.report.step_seconds);
  EXPECT_LT(overlapped.report.mean_split.exposed_tp_seconds, blocking.report.mean_split.exposed_tp_seconds);
  // The same compute, slowed only while a collective runs beside it: by
  // NCCL's CTAs (the backward's re-gathers) without userbuffers, by at most
  // their reduce-scatters' SMs with them.
  ReplayOptions free;
  free.free_communication = true;
  const double compute_alone = simulate(fixtures::scenario_from(doc), free).report.mean_split.compute_seconds;
  const ComputeInterference shares = compute_interference(fixtures::scenario_from(doc));
  EXPECT_GT(overlapped.report.mean_split.compute_seconds, compute_alone);
  EXPECT_LT(overlapped.report.mean_split.compute_seconds,
            compute_alone / (1 - shares.userbuffers_reduce_scatter_sm_share));
  EXPECT_GT(blocking.report.mean_split.compute_seconds, compute_alone);
  EXPECT_LT(blocking.report.mean_split.compute_seconds, compute_alone / (1 - shares.nccl_sm_share));
  fixtures::expect_every_ranks_split_adds_up_to_the_step(overlapped.report);
  fixtures::expect_program_holds_together(overlapped.program, overlapped.workload);
}
