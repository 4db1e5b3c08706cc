#pragma once
// A cluster's network: servers of GPUs on an NVSwitch, one NIC per GPU (or
// fewer), and a fat tree of leaf, spine and core switches above them.
//
// Switch levels are modelled as aggregated bundles: a leaf's uplinks form one
// link whose bandwidth is its downlink total divided by the oversubscription,
// which is what ideal ECMP / adaptive routing delivers. Contention at NICs,
// leaf uplinks and pod uplinks is therefore real; hash collisions are not.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

struct Topology {
  std::string name;
  int gpus_per_node = 8;
  double nvlink_bytes_per_second = 0;  // per GPU per direction, line rate
  double nvlink_latency_seconds = 0;   // GPU to NVSwitch hop
  int nics_per_node = 8;
  double nic_bytes_per_second = 0;     // per NIC per direction, line rate
  double nic_latency_seconds = 0;      // GPU to leaf switch hop (NIC, cable, switch port)
  bool rail_optimized = true;          // NIC i of every node in a unit goes to leaf i
  int nodes_per_unit = 32;             // nodes under one leaf (group of rail leaves)
  int units_per_pod = 4;               // units under one spine layer
  double leaf_oversubscription = 1;    // leaf down/up bandwidth ratio
  double spine_oversubscription = 1;   // pod down/up bandwidth ratio
  double switch_latency_seconds = 0;   // per traversed switch level above the leaf
  // Achievable fraction of line rate for NCCL traffic, from nccl-tests busbw.
  double nvlink_efficiency = 1;
  double network_efficiency = 1;
};

// A built-in topology name (see topologies/) or a path to a topology JSON,
// or an inline JSON object. Paths are relative to base_dir. Throws InputError.
Topology topology_from_json(const nlohmann::json& value, const std::string& file,
                            const std::string& field, const std::string& base_dir);
// Names of the topologies compiled into the binary.
std::vector<std::string> builtin_topology_names();

}  // namespace simtrain
