#include "fabric.hpp"

namespace simtrain {

namespace {
int ceil_div(int a, int b) { return (a + b - 1) / b; }
}  // namespace

Fabric::Fabric(const Topology& topology, int num_gpus) : t_(topology), num_gpus_(num_gpus) {
  const int nodes = ceil_div(num_gpus, t_.gpus_per_node);
  const int leaves_per_unit = t_.rail_optimized ? t_.nics_per_node : 1;
  const int units = ceil_div(nodes, t_.nodes_per_unit);
  const int pods = ceil_div(units, t_.units_per_pod);
  const double nvlink = t_.nvlink_bytes_per_second * t_.nvlink_efficiency;
  const double nic = t_.nic_bytes_per_second * t_.network_efficiency;
  // A leaf's uplink bundle carries what its NIC ports bring, divided by the oversubscription.
  const double leaf_uplink = nic * t_.nodes_per_unit * (t_.nics_per_node / leaves_per_unit) / t_.leaf_oversubscription;
  const double pod_uplink = leaf_uplink * leaves_per_unit * t_.units_per_pod / t_.spine_oversubscription;

  auto add_pair = [&](const std::string& name, double bandwidth, double latency) {
    const int first = add_link(name + "_up", bandwidth, latency);
    add_link(name + "_down", bandwidth, latency);
    return first;
  };
  nvlink_base_ = static_cast<int>(links_.size());
  for (int g = 0; g < num_gpus; ++g) add_pair("nvlink" + std::to_string(g), nvlink, t_.nvlink_latency_seconds);
  nic_base_ = static_cast<int>(links_.size());
  for (int n = 0; n < nodes; ++n)
    for (int i = 0; i < t_.nics_per_node; ++i)
      add_pair("nic" + std::to_string(n) + "." + std::to_string(i), nic, t_.nic_latency_seconds);
  leaf_base_ = static_cast<int>(links_.size());
  for (int l = 0; l < units * leaves_per_unit; ++l)
    add_pair("leaf" + std::to_string(l), leaf_uplink, t_.switch_latency_seconds);
  pod_base_ = static_cast<int>(links_.size());
  for (int p = 0; p < pods; ++p) add_pair("pod" + std::to_string(p), pod_uplink, t_.switch_latency_seconds);
}

int Fabric::add_link(std::string name, double bytes_per_second, double latency_seconds) {
  links_.push_back({std::move(name), bytes_per_second, latency_seconds});
  return static_cast<int>(links_.size()) - 1;
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

std::vector<int> Fabric::route(int src, int dst) const {
  if (src == dst) return {};
  if (node_of(src) == node_of(dst)) return {nvlink_base_ + 2 * src, nvlink_base_ + 2 * dst + 1};
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

double Fabric::route_latency_seconds(int src, int dst) const {
  double latency = 0;
  for (int link : route(src, dst)) latency += links_[link].latency_seconds;
  return latency;
}

}  // namespace simtrain
