#include "sim/longrun/checkpoint_cost.hpp"

#include <algorithm>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/base/text_format.hpp"
#include "sim/engine/storage_transfer.hpp"
#include "sim/step/memory_model.hpp"

namespace simtrain {

namespace {

// The most bytes one node holds (its GPUs' shards together).
double most_node_bytes(const std::vector<double>& shards, int gpus_per_node) {
  std::vector<double> nodes((shards.size() + gpus_per_node - 1) / gpus_per_node, 0.0);
  for (size_t rank = 0; rank < shards.size(); ++rank) nodes[rank / gpus_per_node] += shards[rank];
  return nodes.empty() ? 0 : *std::max_element(nodes.begin(), nodes.end());
}

void check_capacity(const Scenario& s, const std::string& field, double needed_bytes, double capacity_bytes,
                    const std::string& what) {
  if (capacity_bytes <= 0 || needed_bytes <= capacity_bytes) return;
  throw InputError(s.source, field,
                   format("%.1f GB", capacity_bytes / 1e9) + " cannot hold " + what + format(" (%.1f GB)", needed_bytes / 1e9));
}

}  // namespace

CheckpointCost checkpoint_cost(const Scenario& s, const Workload& workload, const Program& program) {
  const Topology& topology = s.cluster.topology;
  if (topology.kind == TopologyKind::simgrid_platform)
    throw InputError(topology.platform_file, "",
                     "checkpoint writes to storage go through each node's NICs, which a SimGrid platform file does "
                     "not name: train on a JSON topology");
  const CheckpointConfig& c = s.run.checkpoint;
  CheckpointCost cost;
  cost.bytes_per_rank = checkpoint_bytes_per_rank(s, workload, program);
  for (double b : cost.bytes_per_rank) cost.bytes += b;
  cost.node_bytes = most_node_bytes(cost.bytes_per_rank, topology.gpus_per_node);

  cost.shared.write_seconds = storage_transfer_seconds(cost.bytes_per_rank, topology, c.storage_write_bytes_per_second,
                                                       c.storage_latency_seconds);
  cost.shared.read_seconds = storage_transfer_seconds(cost.bytes_per_rank, topology, c.storage_read_bytes_per_second,
                                                      c.storage_latency_seconds);
  check_capacity(s, "checkpoint.tiers (shared).capacity_GB", cost.bytes * c.storage_keep, c.storage_capacity_bytes,
                 std::to_string(c.storage_keep) + " checkpoint(s) kept");

  // Host memory: each GPU's copy over its PCIe link, a node's together at the tier's bandwidth.
  StorageTier host;
  host.write_bytes_per_second = host.read_bytes_per_second =
      host_memory_bytes_per_second_per_gpu * topology.gpus_per_node;
  for (const StorageTier& tier : c.node_tiers) {
    const double write = tier.write_bytes_per_second, read = tier.read_bytes_per_second;
    if (tier.kind == StorageKind::host_memory) {
      host = tier;
      if (write <= 0) host.write_bytes_per_second = host_memory_bytes_per_second_per_gpu * topology.gpus_per_node;
      if (read <= 0) host.read_bytes_per_second = host_memory_bytes_per_second_per_gpu * topology.gpus_per_node;
    } else {
      cost.has_local_disk = true;
      cost.local_disk = {cost.node_bytes / write, cost.node_bytes / read};
      check_capacity(s, "checkpoint.tiers (local_disk).capacity_GB", cost.node_bytes * tier.keep, tier.capacity_bytes,
                     std::to_string(tier.keep) + " checkpoint(s) of the fullest node");
    }
  }
  cost.host_memory = {cost.node_bytes / host.write_bytes_per_second, cost.node_bytes / host.read_bytes_per_second};
  const double replicas = static_cast<double>(c.peer_replicas);
  check_capacity(s, "checkpoint.tiers (host_memory).capacity_GB", cost.node_bytes * host.keep * (1 + replicas),
                 host.capacity_bytes,
                 std::to_string(host.keep) + " checkpoint(s) of the fullest node" +
                     (c.peer_replicas > 0 ? " and of its " + std::to_string(c.peer_replicas) + " peer(s)" : ""));

  if (c.peer_replicas > 0) {
    const int nodes = (program.world_size + topology.gpus_per_node - 1) / topology.gpus_per_node;
    if (c.peer_replicas >= nodes)
      throw InputError(s.source, "checkpoint.peer_replicas",
                       std::to_string(c.peer_replicas) + " peer replicas need more than the job's " +
                           std::to_string(nodes) + " node(s)");
    CheckpointFlows flows;
    flows.bytes_per_rank = cost.bytes_per_rank;
    flows.peer_nodes = static_cast<int>(c.peer_replicas);
    cost.peer_memory.write_seconds = simulate_checkpoint_flows(flows, topology).checkpoint_seconds;
    // A replaced node reads its shards back from one peer, through its own NICs.
    cost.peer_memory.read_seconds =
        cost.node_bytes / (topology.nics_per_node * topology.nic_bytes_per_second * topology.network_efficiency);
  }
  return cost;
}

}  // namespace simtrain
