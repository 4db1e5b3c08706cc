// Topology kinds (fat tree, torus, dragonfly): their fields, the routes the
// fabric gives, the built-in topologies, and which links stand for bundles.
#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/base/input_error.hpp"
#include "sim/network/fabric.hpp"
#include "test_support.hpp"

using namespace simtrain;
using testing::HasSubstr;
using V = std::vector<std::string>;

namespace {

Topology parse(const nlohmann::json& document) { return topology_from_json(document, "s.json", "cluster.topology", "."); }

using fixtures::input_error_of;

std::string error_of(const nlohmann::json& document) {
  return input_error_of([&] { parse(document); });
}

nlohmann::json torus_json(const std::vector<int>& dims, int gpus_per_node) {
  return {{"name", "small-torus"}, {"kind", "torus"},      {"gpus_per_node", gpus_per_node},
          {"nvlink_GBps", 200},    {"nvlink_latency_us", 1}, {"torus_dims", dims},
          {"torus_link_GBps", 50}, {"torus_link_latency_us", 0.5}, {"network_efficiency", 0.9}};
}

// 3 groups of 4 routers of 2 nodes of 2 GPUs with 2 NICs: GPU g is on node
// g / 2, router g / 4, group g / 16.
nlohmann::json dragonfly_json() {
  return {{"name", "small-dragonfly"}, {"kind", "dragonfly"}, {"gpus_per_node", 2},
          {"nvlink_GBps", 200},        {"nics_per_node", 2},   {"nic_Gbps", 400},
          {"nic_latency_us", 2},       {"dragonfly_groups", 3}, {"routers_per_group", 4},
          {"nodes_per_router", 2},     {"local_link_GBps", 100}, {"local_link_latency_us", 0.5},
          {"global_link_GBps", 200},   {"global_link_latency_us", 3}};
}

nlohmann::json builtin_json(const std::string& name) {
  return fixtures::read_json(std::string(SIMTRAIN_SOURCE_DIR) + "/topologies/" + name + ".json");
}

std::vector<std::string> path_names(const Fabric& f, int src, int dst) {
  std::vector<std::string> names;
  for (int link : f.route(src, dst)) names.push_back(f.links()[link].name);
  return names;
}

const LinkSpec& link_named(const Fabric& f, const std::string& name) {
  for (const LinkSpec& link : f.links())
    if (link.name == name) return link;
  throw std::logic_error("no link " + name);
}

int index_of(const Fabric& f, const std::string& name) {
  return static_cast<int>(&link_named(f, name) - f.links().data());
}

}  // namespace

// ---- torus ------------------------------------------------------------------

TEST(Torus, TwoDimensionalRoutesGoXThenYTheShorterWayRound) {
  const Fabric f(parse(torus_json({5, 4}, 2)), 40);  // node n at x = n % 5, y = n / 5
  EXPECT_EQ(path_names(f, 0, 1), (V{"nvlink0_up", "nvlink1_down"}));  // one node: its NVSwitch
  EXPECT_EQ(path_names(f, 0, 4), (V{"nvlink0_up", "torus0.x+", "torus1.x+", "nvlink4_down"}));
  EXPECT_EQ(path_names(f, 0, 6), (V{"nvlink0_up", "torus0.x-", "torus4.x-", "nvlink6_down"}));  // wraps around
  EXPECT_EQ(path_names(f, 1, 14), (V{"nvlink1_up", "torus0.x+", "torus1.x+", "torus2.y+", "nvlink14_down"}));
  EXPECT_EQ(path_names(f, 0, 30), (V{"nvlink0_up", "torus0.y-", "nvlink30_down"}));  // y 0 -> 3 wraps
  EXPECT_EQ(path_names(f, 0, 20), (V{"nvlink0_up", "torus0.y+", "torus5.y+", "nvlink20_down"}));  // tie: +
  EXPECT_EQ(path_names(f, 20, 0), (V{"nvlink20_up", "torus10.y+", "torus15.y+", "nvlink0_down"}));
}

TEST(Torus, ThreeDimensionalRoutesAndSizeTwoDimensions) {
  const Fabric f(parse(torus_json({3, 3, 2}, 1)), 18);  // node n at x = n % 3, y = n / 3 % 3, z = n / 9
  EXPECT_EQ(path_names(f, 0, 17), (V{"nvlink0_up", "torus0.x-", "torus2.y-", "torus8.z+", "nvlink17_down"}));
  EXPECT_EQ(path_names(f, 9, 0), (V{"nvlink9_up", "torus9.z+", "nvlink0_down"}));  // size 2: + both ways
  EXPECT_EQ(path_names(f, 4, 0), (V{"nvlink4_up", "torus4.x-", "torus3.y-", "nvlink0_down"}));
  // Per node: x+, x-, y+, y-, z+; every position has them.
  EXPECT_EQ(f.links().size(), 2u * 18 + 5 * 18);
  EXPECT_THROW(link_named(f, "torus0.z-"), std::logic_error);
}

TEST(Torus, LatencyAndBandwidthOfItsLinks) {
  const Fabric f(parse(torus_json({5, 4}, 2)), 40);
  EXPECT_DOUBLE_EQ(f.route_latency_seconds(1, 14), 2 * 1e-6 + 3 * 0.5e-6);
  EXPECT_DOUBLE_EQ(link_named(f, "torus3.y-").bytes_per_second, 0.9 * 50e9);
  EXPECT_DOUBLE_EQ(link_named(f, "torus3.y-").latency_seconds, 0.5e-6);
  EXPECT_DOUBLE_EQ(link_named(f, "nvlink7_up").bytes_per_second, 200e9);
}

TEST(Torus, LinksCoverEveryPositionEvenWithFewerGpus) {
  const Fabric f(parse(torus_json({4, 4}, 4)), 8);  // GPUs on the first two nodes only
  EXPECT_EQ(f.links().size(), 2u * 8 + 4 * 16);
  EXPECT_EQ(path_names(f, 0, 4), (V{"nvlink0_up", "torus0.x+", "nvlink4_down"}));
}

// ---- dragonfly ----------------------------------------------------------------

TEST(Dragonfly, MinimalRoutesByWayOfTheRouterHoldingTheGlobalLink) {
  const Fabric f(parse(dragonfly_json()), 48);
  EXPECT_EQ(path_names(f, 0, 1), (V{"nvlink0_up", "nvlink1_down"}));
  EXPECT_EQ(path_names(f, 0, 2), (V{"nic0.0_up", "nic1.0_down"}));                 // same router
  EXPECT_EQ(path_names(f, 1, 6), (V{"nic0.1_up", "local0-1", "nic3.0_down"}));     // same group
  // Group 0 reaches group 2 from router 2 % 4 = 2 and lands on router 2 * 4 + 0 % 4 = 8.
  EXPECT_EQ(path_names(f, 0, 37), (V{"nic0.0_up", "local0-2", "global0-2", "local8-9", "nic18.1_down"}));
  EXPECT_EQ(path_names(f, 37, 0), (V{"nic18.1_up", "local9-8", "global2-0", "local2-0", "nic0.0_down"}));
  EXPECT_EQ(path_names(f, 8, 32), (V{"nic4.0_up", "global0-2", "nic16.0_down"}));  // no local hop needed
  EXPECT_EQ(path_names(f, 16, 12), (V{"nic8.0_up", "global1-0", "local1-3", "nic6.0_down"}));
}

TEST(Dragonfly, LatencyAndBandwidthOfItsLinks) {
  const Fabric f(parse(dragonfly_json()), 48);
  EXPECT_DOUBLE_EQ(f.route_latency_seconds(0, 37), 2 * 2e-6 + 2 * 0.5e-6 + 3e-6);
  EXPECT_DOUBLE_EQ(link_named(f, "nic5.1_down").bytes_per_second, 50e9);
  EXPECT_DOUBLE_EQ(link_named(f, "local5-6").bytes_per_second, 100e9);
  EXPECT_DOUBLE_EQ(link_named(f, "global1-2").bytes_per_second, 200e9);
}

TEST(Dragonfly, BuildsOnlyTheGroupsThatHoldGpus) {
  const Fabric f(parse(dragonfly_json()), 20);  // 10 nodes, 5 routers: groups 0 and 1
  EXPECT_EQ(f.links().size(), 2u * 20 + 2 * 10 * 2 + 2 * 4 * 3 + 2);
  EXPECT_EQ(path_names(f, 19, 0), (V{"nic9.1_up", "global1-0", "local1-0", "nic0.0_down"}));
}

// ---- what a topology holds ----------------------------------------------------------

TEST(Topology, MaxGpusIsUnboundedOnlyForFatTrees) {
  EXPECT_EQ(parse("dgx-h100-superpod").max_gpus(), 0);
  EXPECT_EQ(parse(torus_json({5, 4}, 2)).max_gpus(), 40);
  EXPECT_EQ(parse(dragonfly_json()).max_gpus(), 48);
  EXPECT_THROW(Fabric(parse(dragonfly_json()), 49), std::invalid_argument);
}

TEST(Topology, ScenarioWithMoreGpusThanTheTopologyHoldsIsRefused) {
  nlohmann::json doc = fixtures::scenario_json(1, 2, 32, 4, "1f1b");  // 64 GPUs
  doc["cluster"]["topology"] = dragonfly_json();
  EXPECT_THAT(input_error_of([&] { fixtures::scenario_from(doc); }),
              HasSubstr("test.json: cluster.num_gpus: topology 'small-dragonfly' holds 48 GPUs, got 64"));
  doc["cluster"]["topology"] = torus_json({4, 4, 4}, 1);
  EXPECT_EQ(fixtures::scenario_from(doc).cluster.topology.kind, TopologyKind::torus);
}

// ---- refused fields ---------------------------------------------------------------

TEST(Topology, BadFieldsAreRefusedWithTheFieldAndTheReason) {
  using nlohmann::json;
  json t = torus_json({4, 4}, 1);
  auto with = [](json document, const std::string& key, const json& value) {
    document[key] = value;
    return error_of(document);
  };
  EXPECT_THAT(with(t, "kind", "mesh"),
              HasSubstr("s.json: cluster.topology.kind: 'mesh' is not one of: fat_tree, torus, dragonfly"));
  for (const json& dims : {json::array(), json::array({4, 0}), json::array({2, 2, 2, 2}), json("4x4"),
                           json::array({4.5})})
    EXPECT_THAT(with(t, "torus_dims", dims), HasSubstr("cluster.topology.torus_dims: expected 1 to 3 sizes of at least 1"))
        << dims;
  EXPECT_THAT(with(t, "torus_dims", json::array({2048, 2048})), HasSubstr("torus_dims: must make at most 1,048,576 positions"));
  t.erase("torus_link_GBps");
  EXPECT_THAT(error_of(t), HasSubstr("cluster.topology.torus_link_GBps: missing"));
  EXPECT_THAT(with(torus_json({4}, 1), "nic_Gbps", 400),
              HasSubstr("cluster.topology.nic_Gbps: applies to kind fat_tree or dragonfly, not to torus"));
  EXPECT_THAT(with(builtin_json("dgx-h100-superpod"),
                   "torus_dims", json::array({4})),
              HasSubstr("torus_dims: applies to kind torus, not to fat_tree"));
  EXPECT_THAT(with(dragonfly_json(), "dragonfly_groups", 2000),
              HasSubstr("cluster.topology.dragonfly_groups: must be at most 1,024, got 2000"));
  EXPECT_THAT(with(dragonfly_json(), "routers_per_group", 0), HasSubstr("routers_per_group: must be at least 1"));
  EXPECT_THAT(with(dragonfly_json(), "nics_per_node", 3), HasSubstr("nics_per_node: must divide gpus_per_node (2)"));
  EXPECT_THAT(with(dragonfly_json(), "global_link_GBps", -1), HasSubstr("global_link_GBps: must be a finite number"));
  EXPECT_THAT(with(dragonfly_json(), "global_link_GBs", 1), HasSubstr("unknown field (did you mean 'global_link_GBps'?)"));
}

// ---- built-in topologies ------------------------------------------------------------

TEST(BuiltinTopologies, AllLoadAndRoute) {
  for (const std::string& name : builtin_topology_names()) {
    SCOPED_TRACE(name);
    const Topology t = parse(name);
    EXPECT_EQ(t.name, name);
    const int gpus = t.max_gpus() > 0 ? t.max_gpus() : 4096;
    const Fabric f(t, gpus);
    EXPECT_FALSE(f.route(0, gpus - 1).empty());
  }
  EXPECT_EQ(parse("dgx-a100-superpod").kind, TopologyKind::fat_tree);
  EXPECT_EQ(parse("tpu-v5p-torus").max_gpus(), 6144);
  EXPECT_EQ(parse("perlmutter-dragonfly").max_gpus(), 7168);
}

TEST(BuiltinTopologies, Roce24kHasPodsOf3072GpusAndAnOversubscribedCore) {
  const Topology t = parse("roce-24k");
  EXPECT_EQ(t.kind, TopologyKind::fat_tree);
  EXPECT_EQ(t.gpus_per_node * t.nodes_per_unit * t.units_per_pod, 3072);
  EXPECT_EQ(t.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(t.nic_bytes_per_second, 50e9);
  EXPECT_DOUBLE_EQ(t.spine_oversubscription, 7);

  const auto start = std::chrono::steady_clock::now();
  const Fabric f(t, 16384);
  const std::vector<int> across_pods = f.route(0, 3072);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(path_names(f, 0, 3072), (V{"nic0.0_up", "leaf0_up", "pod0_up", "pod1_down", "leaf192_down", "nic384.0_down"}));
  EXPECT_EQ(path_names(f, 0, 3064), (V{"nic0.0_up", "leaf0_up", "leaf191_down", "nic383.0_down"}));  // within the pod
  EXPECT_EQ(path_names(f, 3, 11), (V{"nic0.3_up", "nic1.3_down"}));  // same rack
  const double nic = 50e9 * 0.95;
  EXPECT_DOUBLE_EQ(link_named(f, "leaf0_up").bytes_per_second, 16 * nic);           // full bisection in the pod
  EXPECT_DOUBLE_EQ(link_named(f, "pod0_up").bytes_per_second, 3072 * nic / 7);       // 1:7 above it
  EXPECT_EQ(f.links()[across_pods[2]].name, "pod0_up");
}

// roce-98k is roce-24k's pods, 32 of them: a fat tree has as many pods as the
// cluster needs, so every field but the name and the description is roce-24k's.
TEST(BuiltinTopologies, Roce98kIsRoce24kWith32Pods) {
  nlohmann::json roce98k = builtin_json("roce-98k"), roce24k = builtin_json("roce-24k");
  for (nlohmann::json* t : {&roce98k, &roce24k}) t->erase("name"), t->erase("description");
  EXPECT_EQ(roce98k, roce24k);
  const Topology t = parse("roce-98k");
  EXPECT_EQ(98304 / (t.gpus_per_node * t.nodes_per_unit * t.units_per_pod), 32);
}

// ---- bundles and single links -----------------------------------------------------------

TEST(Redundancy, FatTreeUplinksAreBundlesAndEveryOtherLinkIsSingle) {
  const Fabric roce(parse("roce-24k"), 16384);
  EXPECT_EQ(roce.physical_links(index_of(roce, "leaf5_up")), 16);   // 2 nodes x 8 NICs
  EXPECT_EQ(roce.physical_links(index_of(roce, "pod1_down")), 439);  // 16 x 192 / 7, rounded
  EXPECT_TRUE(roce.has_redundancy(index_of(roce, "leaf5_up")));
  for (const std::string& single : {"nvlink5_up", "nic7.3_down"}) {
    EXPECT_EQ(roce.physical_links(index_of(roce, single)), 1) << single;
    EXPECT_FALSE(roce.has_redundancy(index_of(roce, single))) << single;
  }
  const Fabric dgx(parse("dgx-h100-superpod"), 1024);  // rail-optimized: one NIC of each node per leaf
  EXPECT_EQ(dgx.physical_links(index_of(dgx, "leaf3_up")), 32);
  EXPECT_EQ(dgx.physical_links(index_of(dgx, "pod0_up")), 32 * 8 * 4);

  nlohmann::json tapered = builtin_json("dgx-h100-superpod");
  tapered["nodes_per_unit"] = 2;
  tapered["leaf_oversubscription"] = 3;  // 2 / 3 of a cable rounds to 1: no spare
  const Fabric thin(parse(tapered), 64);
  EXPECT_EQ(thin.physical_links(index_of(thin, "leaf0_up")), 1);
  EXPECT_FALSE(thin.has_redundancy(index_of(thin, "leaf0_up")));

  for (const Fabric& f : {Fabric(parse(torus_json({4, 4}, 2)), 32), Fabric(parse(dragonfly_json()), 48)})
    for (int link = 0; link < static_cast<int>(f.links().size()); ++link) {
      EXPECT_EQ(f.physical_links(link), 1) << f.links()[link].name;
      EXPECT_FALSE(f.has_redundancy(link)) << f.links()[link].name;
    }
}
