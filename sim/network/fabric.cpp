#include "sim/network/fabric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/network/platform_routes.hpp"

namespace simtrain {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Position of `to` among the n - 1 members other than `from` (links to every other member).
int other_index(int from, int to) { return to < from ? to : to - 1; }

int cables(double count) { return std::max(1, static_cast<int>(std::lround(count))); }

}  // namespace

Fabric::Fabric(const Topology& topology, int num_gpus, int servers) : t_(topology), num_gpus_(num_gpus), servers_(servers) {
  if (t_.max_gpus() > 0 && num_gpus > t_.max_gpus())
    throw std::invalid_argument("topology " + t_.name + " holds " + std::to_string(t_.max_gpus()) + " GPUs, not " +
                                std::to_string(num_gpus));
  if (t_.kind == TopologyKind::simgrid_platform) {
    build_platform();
    return;
  }
  const int nodes = ceil_div(num_gpus, t_.gpus_per_node);
  nvlink_base_ = static_cast<int>(links_.size());
  for (int g = 0; g < num_gpus; ++g)
    add_pair("nvlink" + std::to_string(g), t_.nvlink_bytes_per_second * t_.nvlink_efficiency,
             t_.nvlink_latency_seconds);
  switch (t_.kind) {
    case TopologyKind::fat_tree: build_fat_tree(nodes); break;
    case TopologyKind::torus: build_torus(); break;
    case TopologyKind::dragonfly: build_dragonfly(nodes); break;
    case TopologyKind::simgrid_platform: break;
  }
  if (servers > 0 && t_.kind != TopologyKind::fat_tree)
    throw std::invalid_argument("parameter servers need a fat-tree topology, not " + t_.name);
  server_base_ = static_cast<int>(links_.size());
  for (int s = 0; s < servers; ++s)
    add_pair("server" + std::to_string(s), t_.nic_bytes_per_second * t_.network_efficiency, t_.nic_latency_seconds);
}

int Fabric::add_link(std::string name, double bytes_per_second, double latency_seconds) {
  links_.push_back({std::move(name), bytes_per_second, latency_seconds});
  return static_cast<int>(links_.size()) - 1;
}

int Fabric::add_pair(const std::string& name, double bytes_per_second, double latency_seconds) {
  const int first = add_link(name + "_up", bytes_per_second, latency_seconds);
  add_link(name + "_down", bytes_per_second, latency_seconds);
  return first;
}

void Fabric::add_nics(int nodes) {
  nic_base_ = static_cast<int>(links_.size());
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < t_.nics_per_node; ++i)
      add_pair("nic" + std::to_string(n) + "." + std::to_string(i), t_.nic_bytes_per_second * t_.network_efficiency,
               t_.nic_latency_seconds);
}

void Fabric::build_fat_tree(int nodes) {
  add_nics(nodes);
  const int leaves_per_unit = t_.rail_optimized ? t_.nics_per_node : 1;
  const int units = ceil_div(nodes, t_.nodes_per_unit);
  const int pods = ceil_div(units, t_.units_per_pod);
  const double nic = t_.nic_bytes_per_second * t_.network_efficiency;
  // A leaf's uplink bundle carries what its NIC ports bring, divided by the oversubscription.
  const double leaf_cables = double(t_.nodes_per_unit) * (t_.nics_per_node / leaves_per_unit) / t_.leaf_oversubscription;
  const double pod_cables = leaf_cables * leaves_per_unit * t_.units_per_pod / t_.spine_oversubscription;
  leaf_bundle_ = cables(leaf_cables);
  pod_bundle_ = cables(pod_cables);
  leaf_base_ = static_cast<int>(links_.size());
  for (int l = 0; l < units * leaves_per_unit; ++l)
    add_pair("leaf" + std::to_string(l), nic * leaf_cables, t_.switch_latency_seconds);
  pod_base_ = static_cast<int>(links_.size());
  for (int p = 0; p < pods; ++p) add_pair("pod" + std::to_string(p), nic * pod_cables, t_.switch_latency_seconds);
  pod_end_ = static_cast<int>(links_.size());
}

void Fabric::build_torus() {
  int positions = 1;
  for (int size : t_.torus_dims) {
    torus_first_link_.push_back(torus_links_per_node_);
    torus_links_per_node_ += std::min(size - 1, 2);
    positions *= size;
  }
  torus_base_ = static_cast<int>(links_.size());
  const double bandwidth = t_.torus_link_bytes_per_second * t_.network_efficiency;
  for (int n = 0; n < positions; ++n)
    for (size_t d = 0; d < t_.torus_dims.size(); ++d) {
      const std::string name = "torus" + std::to_string(n) + "." + "xyz"[d];
      if (t_.torus_dims[d] > 1) add_link(name + "+", bandwidth, t_.torus_link_latency_seconds);
      if (t_.torus_dims[d] > 2) add_link(name + "-", bandwidth, t_.torus_link_latency_seconds);
    }
}

void Fabric::build_dragonfly(int nodes) {
  add_nics(nodes);
  const int per_group = t_.routers_per_group;
  groups_ = ceil_div(ceil_div(nodes, t_.nodes_per_router), per_group);
  local_base_ = static_cast<int>(links_.size());
  const double local = t_.local_link_bytes_per_second * t_.network_efficiency;
  for (int r = 0; r < groups_ * per_group; ++r)
    for (int i = 0; i < per_group; ++i) {
      const int to = r / per_group * per_group + i;
      if (to != r) add_link("local" + std::to_string(r) + "-" + std::to_string(to), local, t_.local_link_latency_seconds);
    }
  global_base_ = static_cast<int>(links_.size());
  const double global = t_.global_link_bytes_per_second * t_.network_efficiency;
  for (int g = 0; g < groups_; ++g)
    for (int h = 0; h < groups_; ++h)
      if (h != g) add_link("global" + std::to_string(g) + "-" + std::to_string(h), global, t_.global_link_latency_seconds);
}

void Fabric::build_platform() {
  if (!t_.platform) throw std::invalid_argument("platform file " + t_.platform_file + " was not loaded");
  if (num_gpus_ > t_.platform->gpus)
    throw std::invalid_argument("platform file " + t_.platform_file + " routes " + std::to_string(t_.platform->gpus) +
                                " hosts, not " + std::to_string(num_gpus_));
  if (servers_ > 0) throw std::invalid_argument("parameter servers need a fat-tree topology, not a platform file");
  for (const LinkSpec& link : t_.platform->links)
    add_link(link.name, link.bytes_per_second * t_.network_efficiency, link.latency_seconds);
}

int Fabric::nic_of(int gpu) const {
  const int gpus_per_nic = t_.gpus_per_node / t_.nics_per_node;
  return node_of(gpu) * t_.nics_per_node + (gpu % t_.gpus_per_node) / gpus_per_nic;
}

int Fabric::leaf_of(int gpu) const {
  const int unit = node_of(gpu) / t_.nodes_per_unit;
  if (!t_.rail_optimized) return unit;
  return unit * t_.nics_per_node + nic_of(gpu) % t_.nics_per_node;
}

int Fabric::pod_of(int gpu) const { return node_of(gpu) / t_.nodes_per_unit / t_.units_per_pod; }

int Fabric::torus_link(int node, int dim, bool positive) const {
  return torus_base_ + node * torus_links_per_node_ + torus_first_link_[dim] + (positive ? 0 : 1);
}

int Fabric::router_of(int gpu) const { return node_of(gpu) / t_.nodes_per_router; }

int Fabric::local_link(int from_router, int to_router) const {
  return local_base_ + from_router * (t_.routers_per_group - 1) +
         other_index(from_router % t_.routers_per_group, to_router % t_.routers_per_group);
}

int Fabric::global_link(int from_group, int to_group) const {
  return global_base_ + from_group * (groups_ - 1) + other_index(from_group, to_group);
}

std::vector<int> Fabric::route(int src, int dst) const {
  if (src == dst) return {};
  if (t_.kind == TopologyKind::simgrid_platform) return t_.platform->route(src, dst);
  if (src >= num_gpus_ || dst >= num_gpus_) return server_route(src, dst);
  if (node_of(src) == node_of(dst)) return {nvlink_base_ + 2 * src, nvlink_base_ + 2 * dst + 1};
  switch (t_.kind) {
    case TopologyKind::torus: return torus_route(src, dst);
    case TopologyKind::dragonfly: return dragonfly_route(src, dst);
    case TopologyKind::fat_tree:
    case TopologyKind::simgrid_platform: break;
  }
  return fat_tree_route(src, dst);
}

std::vector<int> Fabric::fat_tree_route(int src, int dst) const {
  std::vector<int> path = {nic_base_ + 2 * nic_of(src)};
  if (leaf_of(src) != leaf_of(dst)) {
    path.push_back(leaf_base_ + 2 * leaf_of(src));
    if (pod_of(src) != pod_of(dst)) {
      path.push_back(pod_base_ + 2 * pod_of(src));
      path.push_back(pod_base_ + 2 * pod_of(dst) + 1);
    }
    path.push_back(leaf_base_ + 2 * leaf_of(dst) + 1);
  }
  path.push_back(nic_base_ + 2 * nic_of(dst) + 1);
  return path;
}

std::vector<int> Fabric::torus_route(int src, int dst) const {
  std::vector<int> path = {nvlink_base_ + 2 * src};
  int node = node_of(src), stride = 1;
  for (size_t d = 0; d < t_.torus_dims.size(); ++d) {
    const int size = t_.torus_dims[d];
    int at = node / stride % size;
    const int forward = (node_of(dst) / stride % size - at + size) % size;
    const bool positive = forward <= size - forward;
    for (int hop = 0; hop < (positive ? forward : size - forward); ++hop) {
      path.push_back(torus_link(node, static_cast<int>(d), positive));
      const int next = (at + (positive ? 1 : size - 1)) % size;
      node += (next - at) * stride;
      at = next;
    }
    stride *= size;
  }
  path.push_back(nvlink_base_ + 2 * dst + 1);
  return path;
}

std::vector<int> Fabric::dragonfly_route(int src, int dst) const {
  std::vector<int> path = {nic_base_ + 2 * nic_of(src)};
  const int per_group = t_.routers_per_group;
  int router = router_of(src);
  auto hop_locally_to = [&](int next) {
    if (next != router) path.push_back(local_link(router, next));
    router = next;
  };
  const int group = router / per_group, dst_group = router_of(dst) / per_group;
  if (group != dst_group) {
    hop_locally_to(group * per_group + dst_group % per_group);
    path.push_back(global_link(group, dst_group));
    router = dst_group * per_group + group % per_group;
  }
  hop_locally_to(router_of(dst));
  path.push_back(nic_base_ + 2 * nic_of(dst) + 1);
  return path;
}

std::vector<int> Fabric::server_route(int src, int dst) const {
  const bool to_server = dst >= num_gpus_;
  const int gpu = to_server ? src : dst;
  const int server_up = server_base_ + 2 * ((to_server ? dst : src) - num_gpus_);
  const int way = to_server ? 0 : 1;  // _up links lead to the core, _down links away from it
  std::vector<int> path = {nic_base_ + 2 * nic_of(gpu) + way, leaf_base_ + 2 * leaf_of(gpu) + way,
                           pod_base_ + 2 * pod_of(gpu) + way};
  if (to_server) {
    path.push_back(server_up + 1);
    return path;
  }
  std::reverse(path.begin(), path.end());
  path.insert(path.begin(), server_up);
  return path;
}

double Fabric::route_latency_seconds(int src, int dst) const {
  double latency = 0;
  for (int link : route(src, dst)) latency += links_[link].latency_seconds;
  return latency;
}

int Fabric::physical_links(int link) const {
  if (link >= leaf_base_ && link < pod_base_) return leaf_bundle_;
  if (link >= pod_base_ && link < pod_end_) return pod_bundle_;
  return 1;
}

}  // namespace simtrain
