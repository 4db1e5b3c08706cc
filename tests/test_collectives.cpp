// Collective plans (NCCL's ring, double binary tree and all-to-all) and the fabric's paths.
#include <gtest/gtest.h>

#include <map>

#include "sim/network/collective_plan.hpp"
#include "sim/network/fabric.hpp"

using namespace simtrain;

namespace {

Topology superpod() {
  Topology t;
  t.gpus_per_node = 8;
  t.nics_per_node = 8;
  t.nvlink_bytes_per_second = 450e9;
  t.nic_bytes_per_second = 50e9;
  t.nvlink_latency_seconds = 1e-6;
  t.nic_latency_seconds = 2e-6;
  t.switch_latency_seconds = 0.5e-6;
  t.nodes_per_unit = 4;
  t.units_per_pod = 2;
  return t;
}

std::vector<std::string> path_names(const Fabric& f, int src, int dst) {
  std::vector<std::string> names;
  for (int link : f.route(src, dst)) names.push_back(f.links()[link].name);
  return names;
}

}  // namespace

TEST(Fabric, PathsClimbOnlyAsHighAsTheyMust) {
  const Fabric f(superpod(), 128);  // 16 nodes, 4 units of 4 nodes, 2 pods
  using V = std::vector<std::string>;
  EXPECT_EQ(path_names(f, 0, 3), (V{"nvlink0_up", "nvlink3_down"}));                // same node: NVSwitch
  EXPECT_EQ(path_names(f, 1, 9), (V{"nic0.1_up", "nic1.1_down"}));                  // same rail, same unit: one leaf
  EXPECT_EQ(path_names(f, 1, 10), (V{"nic0.1_up", "leaf1_up", "leaf2_down", "nic1.2_down"}));  // other rail
  EXPECT_EQ(path_names(f, 1, 33), (V{"nic0.1_up", "leaf1_up", "leaf9_down", "nic4.1_down"}));  // other unit
  EXPECT_EQ(path_names(f, 1, 65),
            (V{"nic0.1_up", "leaf1_up", "pod0_up", "pod1_down", "leaf17_down", "nic8.1_down"}));  // other pod
  EXPECT_DOUBLE_EQ(f.route_latency_seconds(1, 9), 4e-6);
}

TEST(Fabric, OversubscriptionDividesUplinkBandwidth) {
  Topology t = superpod();
  t.leaf_oversubscription = 4;
  const Fabric f(t, 128);
  for (const LinkSpec& link : f.links())
    if (link.name == "leaf1_up") EXPECT_DOUBLE_EQ(link.bytes_per_second, 4 * 50e9 / 4);
}

TEST(CollectivePlan, RingMovesTheNcclBusBandwidthShare) {
  const Fabric f(superpod(), 128);
  const std::vector<int> ranks = {0, 8, 16, 24};
  const CollectivePlan ar = plan_collective(TaskKind::ALLREDUCE, ranks, 1e9, 1, Algorithm::ring, f);
  ASSERT_EQ(ar.flows.size(), 4u);
  for (const Flow& flow : ar.flows) EXPECT_DOUBLE_EQ(flow.bytes, 2.0 * 3 / 4 * 1e9);
  EXPECT_EQ(ar.flows[3].src, 24);
  EXPECT_EQ(ar.flows[3].dst, 0);
  EXPECT_DOUBLE_EQ(ar.latency_seconds, 6 * 4e-6);
  const CollectivePlan ag = plan_collective(TaskKind::ALLGATHER, ranks, 1e9, 3, Algorithm::tree, f);
  EXPECT_EQ(ag.algorithm, Algorithm::ring);  // NCCL has no tree all-gather
  EXPECT_DOUBLE_EQ(ag.flows[0].bytes, 3 * 3.0 / 4 * 1e9);
  EXPECT_DOUBLE_EQ(closed_form_seconds(ag, f), 3 * (0.75e9 / 50e9 + 3 * 4e-6));
}

TEST(CollectivePlan, DoubleBinaryTreeSendsHalfTheBufferEachWayOnEveryEdge) {
  const Fabric f(superpod(), 128);
  std::vector<int> ranks;
  for (int node = 0; node < 16; ++node) ranks.push_back(8 * node);
  const CollectivePlan tree = plan_collective(TaskKind::ALLREDUCE, ranks, 1e9, 1, Algorithm::tree, f);
  EXPECT_EQ(tree.flows.size(), 2u * 2 * 15);
  for (const Flow& flow : tree.flows) EXPECT_DOUBLE_EQ(flow.bytes, 0.5e9);
  EXPECT_GT(tree.latency_seconds, 0);
  // Latency-bound small messages go to the tree, bandwidth-bound large ones to the ring.
  EXPECT_EQ(choose_allreduce_algorithm(ranks, 4096, f), Algorithm::tree);
  EXPECT_EQ(choose_allreduce_algorithm(ranks, 4e9, f), Algorithm::ring);
}

// Each rank lists its peers by the shape of their routes (their links'
// bandwidths in order, narrowest first: here the NICs before NVLink, and a
// peer on the rank's own rail before the other rails, which cross the
// leaves), then by how far round the group they are: alike flows
// sit at one place of every rank's list, where the replay's symmetry
// reduction compares them.
TEST(CollectivePlan, AllToAllListsEachRanksPeersByRouteThenOffset) {
  const Fabric f(superpod(), 128);
  const std::vector<int> ranks = {0, 1, 2, 3, 8, 9, 10, 11};  // two nodes, four GPUs each
  const CollectivePlan plan = plan_collective(TaskKind::ALLTOALL, ranks, 1e9, 1, Algorithm::ring, f);
  std::map<int, std::vector<int>> peers;
  for (const Flow& flow : plan.flows) peers[flow.src].push_back(flow.dst);
  EXPECT_EQ(peers[0], (std::vector<int>{8, 9, 10, 11, 1, 2, 3}));
  EXPECT_EQ(peers[2], (std::vector<int>{10, 8, 9, 11, 3, 0, 1}));
  EXPECT_EQ(peers[9], (std::vector<int>{1, 0, 2, 3, 10, 11, 8}));
}

// Every rank sends 1/n of its buffer to each other rank, all at once: (n-1)/n
// of it leaves each rank and as much arrives, in one step's latency.
TEST(CollectivePlan, AllToAllSendsEachPeerItsShareAtOnce) {
  const Fabric f(superpod(), 128);
  const std::vector<int> ranks = {0, 1, 2, 3, 8, 9, 10, 11};  // two nodes, four GPUs each
  const int n = static_cast<int>(ranks.size());
  const double bytes = 1e9;
  const CollectivePlan plan = plan_collective(TaskKind::ALLTOALL, ranks, bytes, 2, Algorithm::tree, f);
  EXPECT_EQ(plan.algorithm, Algorithm::pairwise);  // whatever the all-reduce's algorithm
  ASSERT_EQ(plan.flows.size(), size_t(n * (n - 1)));
  std::map<int, double> sent, received;
  for (const Flow& flow : plan.flows) {
    EXPECT_NE(flow.src, flow.dst);
    EXPECT_DOUBLE_EQ(flow.bytes, 2 * bytes / n);
    sent[flow.src] += flow.bytes;
    received[flow.dst] += flow.bytes;
  }
  for (int rank : ranks) {
    EXPECT_DOUBLE_EQ(sent[rank], 2 * (n - 1.0) / n * bytes) << rank;
    EXPECT_DOUBLE_EQ(received[rank], sent[rank]) << rank;
  }
  EXPECT_DOUBLE_EQ(plan.step_latency_seconds, f.route_latency_seconds(0, 9));  // across nodes, across rails
  EXPECT_DOUBLE_EQ(plan.latency_seconds, 2 * plan.step_latency_seconds);
  EXPECT_EQ(to_string(Algorithm::pairwise), "pairwise");
}

// Where each link's flows share one bottleneck, max-min sharing runs every
// flow at its bottleneck's pace from start to end and the closed form is the
// time; where a NIC carries flows of two bottlenecks (within the rail and
// over an oversubscribed leaf uplink), the faster ones end first and it is
// not. The replay checks the exact ones against its flows (test_replay.cpp).
TEST(CollectivePlan, AllToAllClosedFormIsExactWhereEveryLinksFlowsShareOneBottleneck) {
  const std::vector<int> two_nodes = {0, 1, 2, 3, 8, 9, 10, 11};  // four GPUs each
  const auto exact = [](const Topology& topology, const std::vector<int>& ranks) {
    const Fabric f(topology, 128);
    return closed_form_is_exact(plan_collective(TaskKind::ALLTOALL, ranks, 1e9, 1, Algorithm::ring, f), f);
  };
  EXPECT_TRUE(exact(superpod(), {0, 1, 2, 3, 4, 5, 6, 7}));  // one NVLink domain
  EXPECT_TRUE(exact(superpod(), two_nodes));                 // NVLink within a node, NICs across
  Topology oversubscribed = superpod();
  oversubscribed.leaf_oversubscription = 8;  // the leaf uplinks, not the NICs, bound the flows across rails
  EXPECT_FALSE(exact(oversubscribed, two_nodes));
  EXPECT_TRUE(exact(oversubscribed, {0, 8, 16, 24}));  // one rail: NICs only

  Flow bounded{0, 1, 1e6, 1e9};  // a Gloo connection's own bound
  CollectivePlan plan;
  plan.flows = {bounded};
  EXPECT_FALSE(closed_form_is_exact(plan, Fabric(superpod(), 8)));
}
