#include "sim/longrun/persist_interference.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "sim/engine/simulate.hpp"
#include "sim/engine/storage_transfer.hpp"
#include "sim/network/fabric.hpp"

namespace simtrain {

namespace {

// The copies of `flows` alone and beside a flow per NIC that outlasts them.
CopyInterference beside_the_step(CheckpointFlows flows, const Topology& topology) {
  const double nic_bytes_per_second = topology.nic_bytes_per_second * topology.network_efficiency;
  const double alone = simulate_checkpoint_flows(flows, topology).checkpoint_seconds;
  if (!(alone > 0)) return {};
  // At least half of each NIC is the step flow's under max-min, so the
  // copies end within twice their time alone; this outlasts that.
  flows.competing_bytes_per_nic = 4 * nic_bytes_per_second * alone;
  const double beside = simulate_checkpoint_flows(flows, topology).checkpoint_seconds;
  const int gpus_per_nic = topology.gpus_per_node / topology.nics_per_node;
  std::map<int, double> per_nic;
  for (size_t rank = 0; rank < flows.bytes_per_rank.size(); ++rank)
    per_nic[static_cast<int>(rank) / gpus_per_nic] += flows.bytes_per_rank[rank] * std::max(1, flows.peer_nodes);
  double busiest = 0;
  for (const auto& [nic, bytes] : per_nic) busiest = std::max(busiest, bytes);
  return {beside / alone, std::min(1.0, busiest / beside / nic_bytes_per_second), 0};
}

// The step with every NIC link at what `copy` leaves it: writes leave
// through the up links; peer copies also arrive through the down links.
double step_beside(const Scenario& s, const ReplayOptions& replay, double step_seconds, const CopyInterference& copy,
                   bool down_links_too) {
  if (copy.nic_share <= 0) return step_seconds;
  ReplayOptions slower = replay;
  const Fabric fabric(s.cluster.topology, static_cast<int>(s.cluster.num_gpus));
  for (const LinkSpec& link : fabric.links()) {
    const bool nic = link.name.rfind("nic", 0) == 0;
    const bool up = link.name.size() > 3 && link.name.compare(link.name.size() - 3, 3, "_up") == 0;
    if (nic && (up || down_links_too)) slower.link_bandwidth_factors[link.name] = 1 - copy.nic_share;
  }
  // A step cannot be faster with less bandwidth; the max hides rounding in the flow solver.
  return std::max(step_seconds, simulate(s, slower).timeline.step_seconds);
}

}  // namespace

PersistInterference persist_interference(const Scenario& s, const ReplayOptions& replay, double step_seconds,
                                         const CheckpointCost& cost, bool shared_persist, bool peer_copies) {
  PersistInterference result;
  result.shared.step_seconds = result.peers.step_seconds = step_seconds;
  if (!shared_persist && !peer_copies) return result;
  const Topology& topology = s.cluster.topology;
  if (topology.kind != TopologyKind::fat_tree && topology.kind != TopologyKind::dragonfly) {
    result.note = "not simulated: a " + to_string(topology.kind) + " topology has no NICs the copies could share";
    return result;
  }
  CheckpointFlows flows;
  flows.bytes_per_rank = cost.bytes_per_rank;
  flows.storage_bytes_per_second = s.run.checkpoint.storage_write_bytes_per_second;
  flows.storage_latency_seconds = s.run.checkpoint.storage_latency_seconds;
  if (shared_persist) {
    result.shared = beside_the_step(flows, topology);
    result.shared.step_seconds = step_beside(s, replay, step_seconds, result.shared, false);
  }
  if (peer_copies) {
    flows.peer_nodes = static_cast<int>(s.run.checkpoint.peer_replicas);
    result.peers = beside_the_step(flows, topology);
    result.peers.step_seconds = step_beside(s, replay, step_seconds, result.peers, true);
  }
  return result;
}

double persist_slowdown_seconds(const PersistInterference& interference, double shared_seconds, double peer_seconds,
                                double step_seconds) {
  // Over the copies' seconds, a step takes step' instead of step: the steps lose (1 - step/step') of that time.
  auto lost = [&](const CopyInterference& copy, double seconds) {
    return copy.step_seconds > step_seconds ? seconds * (1 - step_seconds / copy.step_seconds) : 0;
  };
  return lost(interference.shared, shared_seconds) + lost(interference.peers, peer_seconds);
}

}  // namespace simtrain
