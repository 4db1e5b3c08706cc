#pragma once
// The links of a cluster built from a Topology, and the path between any two
// GPUs. Pure C++: the SimGrid platform is built from it, and closed-form
// collective times use the same links, so both agree by construction.
#include <string>
#include <vector>

#include "topology.hpp"

namespace simtrain {

struct LinkSpec {
  std::string name;
  double bytes_per_second = 0;  // achievable (line rate x efficiency), per direction
  double latency_seconds = 0;
};

class Fabric {
public:
  Fabric(const Topology& topology, int num_gpus);

  int num_gpus() const { return num_gpus_; }
  int node_of(int gpu) const { return gpu / t_.gpus_per_node; }
  const std::vector<LinkSpec>& links() const { return links_; }
  // Link indices from src to dst, in order (empty when src == dst).
  std::vector<int> route(int src, int dst) const;
  double route_latency_seconds(int src, int dst) const;

private:
  int add_link(std::string name, double bytes_per_second, double latency_seconds);
  int leaf_of(int gpu) const;
  int pod_of(int gpu) const;
  int nic_of(int gpu) const;

  Topology t_;
  int num_gpus_;
  std::vector<LinkSpec> links_;
  // First link index of each family; up and down links alternate.
  int nvlink_base_ = 0, nic_base_ = 0, leaf_base_ = 0, pod_base_ = 0;
};

}  // namespace simtrain
