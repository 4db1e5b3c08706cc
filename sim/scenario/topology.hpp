#pragma once
// A cluster's network. Every kind has servers (nodes) of GPUs on an NVSwitch;
// what joins the nodes depends on the kind:
//
// - fat_tree: one NIC per GPU (or fewer) and a tree of leaf, spine and core
//   switches. Switch levels are modelled as aggregated bundles: a leaf's
//   uplinks form one link whose bandwidth is its downlink total divided by the
//   oversubscription, which is what ideal ECMP / adaptive routing delivers.
//   Contention at NICs, leaf uplinks and pod uplinks is therefore real; hash
//   collisions are not.
// - torus (TPU-like): each node sits at a position of a 1D/2D/3D torus and its
//   NVSwitch is also its torus router; neighbours are joined by one link per
//   direction in every dimension, with wraparound.
// - dragonfly: the NICs of a node go to one router; the routers of a group are
//   joined all-to-all by local links, and every pair of groups by one global
//   link.
// - simgrid_platform: a SimGrid platform XML file written by the user (or by
//   `simtrain export-platform`): its hosts in document order are the GPUs in
//   rank order, its links and routes are taken as SimGrid reads them
//   (sim/engine/platform_file.hpp loads them into `platform`).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

enum class TopologyKind { fat_tree, torus, dragonfly, simgrid_platform };

struct PlatformRoutes;  // sim/network/platform_routes.hpp

struct Topology {
  std::string name;
  std::string file;  // the JSON file it was read from; empty if built in or inline
  // The GPUs the system was built for (its NVLink figures are theirs); empty: not said.
  std::vector<std::string> built_for;
  TopologyKind kind = TopologyKind::fat_tree;
  int gpus_per_node = 8;
  double nvlink_bytes_per_second = 0;  // per GPU per direction, line rate
  double nvlink_latency_seconds = 0;   // GPU to NVSwitch hop
  // Fat tree and dragonfly: a node's NICs.
  int nics_per_node = 8;
  double nic_bytes_per_second = 0;     // per NIC per direction, line rate
  double nic_latency_seconds = 0;      // GPU to leaf switch (or router) hop: NIC, cable, switch port
  // Fat tree.
  bool rail_optimized = true;          // NIC i of every node in a unit goes to leaf i
  int nodes_per_unit = 32;             // nodes under one leaf (group of rail leaves)
  int units_per_pod = 4;               // units under one spine layer
  double leaf_oversubscription = 1;    // leaf down/up bandwidth ratio
  double spine_oversubscription = 1;   // pod down/up bandwidth ratio
  double switch_latency_seconds = 0;   // per traversed switch level above the leaf
  // Torus: positions per dimension (node n has coordinate n / (product of
  // the earlier sizes) % size in each dimension: dimension 0 varies fastest).
  std::vector<int> torus_dims;
  double torus_link_bytes_per_second = 0;  // per link per direction, line rate
  double torus_link_latency_seconds = 0;   // router to neighbouring router hop
  // Dragonfly: node n hangs off router n / nodes_per_router, router r
  // belongs to group r / routers_per_group.
  int dragonfly_groups = 0;
  int routers_per_group = 0;
  int nodes_per_router = 0;
  double local_link_bytes_per_second = 0;  // router to router within a group, per direction, line rate
  double local_link_latency_seconds = 0;
  double global_link_bytes_per_second = 0;  // group to group, per direction, line rate
  double global_link_latency_seconds = 0;
  // Achievable fraction of line rate for NCCL traffic, from nccl-tests busbw;
  // network_efficiency applies to every link outside the node.
  double nvlink_efficiency = 1;
  double network_efficiency = 1;  // a platform file's links: this fraction of their bandwidth
  // SimGrid platform: the XML file, and its links and routes once loaded
  // (null until then: the core reads no XML).
  std::string platform_file;
  std::shared_ptr<const PlatformRoutes> platform;

  // GPUs the topology can hold: 0 for a fat tree, which grows with the job,
  // and for a platform file not loaded yet.
  int max_gpus() const;
};

// What a SimGrid platform file cannot express of simtrain's fabrics, or is
// read differently from a JSON topology: one sentence each, for the report.
std::vector<std::string> simgrid_platform_notes();

std::string to_string(TopologyKind kind);

// A built-in topology name (see topologies/), a path to a topology JSON or to
// a SimGrid platform XML (ending in .xml), or an inline JSON object. Paths are
// relative to base_dir. Throws InputError.
Topology topology_from_json(const nlohmann::json& value, const std::string& file,
                            const std::string& field, const std::string& base_dir);
// The JSON object of a built-in topology name or of a topology file (its
// path, relative to base_dir, in `path_read`; empty for a built-in one), so
// that --set can change one of its fields. Throws InputError.
nlohmann::json topology_document(const std::string& name, const std::string& file, const std::string& field,
                                 const std::string& base_dir, std::string& path_read);
// Names of the topologies compiled into the binary.
std::vector<std::string> builtin_topology_names();

}  // namespace simtrain
