#pragma once
// The links of a cluster built from a Topology, and the path between any two
// GPUs. Pure C++: the SimGrid platform is built from it, and closed-form
// collective times use the same links, so both agree by construction.
//
// Links are directed (one per direction), created per GPU, NIC, switch or
// router (never per pair of GPUs), and routes are computed on demand, so
// fabrics of tens of thousands of GPUs build in milliseconds. Links by kind:
// - every kind: nvlink{g}_up / _down between GPU g and its node's NVSwitch;
//   two GPUs of one node talk through it.
// - fat_tree: nic{n}.{i}_up / _down between NIC i of node n and its leaf;
//   leaf{l}_up / _down bundle leaf l's uplinks, pod{p}_up / _down pod p's.
//   A path climbs only as high as it must.
// - torus: the node's NVSwitch is its torus router, so a GPU enters and
//   leaves the torus over its nvlink pair. torus{n}.{x,y,z}{+,-} goes from
//   node n to its neighbour in that dimension and direction (a dimension of
//   size 2 has only the + link, one of size 1 none). Dimension-order routing:
//   x, then y, then z, each the shorter way round (ties: +). Links exist for
//   every position, holding GPUs or not, as routes wrap through them all.
// - dragonfly: nic{n}.{i}_up / _down between NIC i of node n and its router;
//   local{r}-{s} from router r to router s of the same group; global{g}-{h}
//   from group g to group h, leaving from router h % routers_per_group of g
//   and arriving at router g % routers_per_group of h. Minimal routing: a
//   local hop to the router holding the global link, the global hop, a local
//   hop to the destination's router (each only where the routers differ).
//   Only groups that hold GPUs are built.
// - parameter servers (fat tree only): hosts num_gpus, num_gpus + 1, ...
//   after the GPUs, hanging off the core with one NIC each: server{s}_up
//   (server to core) / _down. A GPU reaches them over its NIC, leaf and pod
//   uplinks.
// - simgrid_platform: the links of the file, named as SimGrid names them
//   (a SPLITDUPLEX link is two: name_UP, name_DOWN), and SimGrid's route
//   between each pair of hosts (sim/network/platform_routes.hpp).
#include <string>
#include <vector>

#include "sim/scenario/topology.hpp"

namespace simtrain {

struct LinkSpec {
  std::string name;
  double bytes_per_second = 0;  // achievable (line rate x efficiency), per direction
  double latency_seconds = 0;
};

class Fabric {
public:
  // Throws std::invalid_argument when the topology cannot hold num_gpus.
  Fabric(const Topology& topology, int num_gpus, int servers = 0);

  int num_gpus() const { return num_gpus_; }
  int num_hosts() const { return num_gpus_ + servers_; }  // GPUs, then parameter servers
  int node_of(int gpu) const { return gpu / t_.gpus_per_node; }
  const std::vector<LinkSpec>& links() const { return links_; }
  // Link indices from src to dst, in order (empty when src == dst).
  std::vector<int> route(int src, int dst) const;
  double route_latency_seconds(int src, int dst) const;

  // The physical links (cables, counted at NIC rate) a link stands for: a
  // fat-tree leaf uplink bundle is nodes_per_unit x the NICs each node has on
  // that leaf / leaf_oversubscription, a pod uplink bundle is the pod's leaf
  // uplinks / spine_oversubscription (both rounded, at least 1); every other
  // link (NVLink, NIC, torus, dragonfly) is a single one.
  int physical_links(int link) const;
  // Whether the link survives the loss of one physical link (at lower bandwidth).
  bool has_redundancy(int link) const { return physical_links(link) > 1; }

private:
  int add_link(std::string name, double bytes_per_second, double latency_seconds);
  int add_pair(const std::string& name, double bytes_per_second, double latency_seconds);
  void add_nics(int nodes);
  void build_fat_tree(int nodes);
  void build_torus();
  void build_dragonfly(int nodes);
  void build_platform();
  std::vector<int> fat_tree_route(int src, int dst) const;
  std::vector<int> torus_route(int src, int dst) const;
  std::vector<int> dragonfly_route(int src, int dst) const;
  std::vector<int> server_route(int src, int dst) const;
  int nic_of(int gpu) const;
  int leaf_of(int gpu) const;
  int pod_of(int gpu) const;
  int torus_link(int node, int dim, bool positive) const;
  int router_of(int gpu) const;
  int local_link(int from_router, int to_router) const;
  int global_link(int from_group, int to_group) const;

  Topology t_;
  int num_gpus_;
  std::vector<LinkSpec> links_;
  // First link index of each family; up and down links alternate.
  int nvlink_base_ = 0, nic_base_ = 0;
  // Fat tree: leaf and pod uplink bundles, and the physical links each stands for.
  int leaf_base_ = 0, pod_base_ = 0, pod_end_ = 0;
  int leaf_bundle_ = 1, pod_bundle_ = 1;
  // Torus: each node's links, dimension by dimension, + before -.
  int torus_base_ = 0, torus_links_per_node_ = 0;
  std::vector<int> torus_first_link_;  // per dimension, offset within a node's links
  // Dragonfly: local links router by router, then global links group by group.
  int local_base_ = 0, global_base_ = 0, groups_ = 0;
  int servers_ = 0, server_base_ = 0;
};

}  // namespace simtrain
