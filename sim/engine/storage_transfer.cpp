#include "sim/engine/storage_transfer.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/engine/host_transfers.hpp"
#include "sim/engine/simgrid_setup.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

namespace {

// The platform: one host per rank and per NIC (the competing flows'
// sources), one per node (where peer copies and competing flows arrive: a
// receiving actor each, not one per rank), the storage host, each NIC's up
// and down links, the storage's link.
struct Platform {
  sg4::Host* storage = nullptr;
  std::vector<sg4::Host*> ranks, nic_hosts, nodes;
  std::vector<sg4::Link*> up, down;
};

Platform build_platform(const CheckpointFlows& flows, const Topology& topology, int nics) {
  auto* zone = sg4::create_full_zone("checkpoint");
  Platform p;
  p.storage = zone->create_host("storage", host_speed_flops);
  sg4::Link* storage_link = zone->create_link("storage", flows.storage_bytes_per_second > 0 ? flows.storage_bytes_per_second : 1)
                                ->set_latency(flows.storage_latency_seconds)
                                ->seal();
  const double nic_bytes_per_second = topology.nic_bytes_per_second * topology.network_efficiency;
  for (int k = 0; k < nics; ++k) {
    p.up.push_back(zone->create_link("nic" + std::to_string(k) + "_up", nic_bytes_per_second)->seal());
    p.down.push_back(zone->create_link("nic" + std::to_string(k) + "_down", nic_bytes_per_second)->seal());
  }
  const int gpus_per_nic = topology.gpus_per_node / topology.nics_per_node;
  const int ranks = static_cast<int>(flows.bytes_per_rank.size());
  const int nodes = (ranks + topology.gpus_per_node - 1) / topology.gpus_per_node;
  if (flows.peer_nodes > 0 || flows.competing_bytes_per_nic > 0)
    for (int n = 0; n < nodes; ++n) p.nodes.push_back(zone->create_host("node" + std::to_string(n), host_speed_flops));
  for (int rank = 0; rank < ranks; ++rank) {
    p.ranks.push_back(zone->create_host("gpu" + std::to_string(rank), host_speed_flops));
    zone->add_route(p.ranks.back()->get_netpoint(), p.storage->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(p.up[rank / gpus_per_nic]), sg4::LinkInRoute(storage_link)}, false);
    // To the same GPU slot's NIC of each peer node.
    for (int j = 1; j <= flows.peer_nodes && j < nodes; ++j) {
      const int peer = (rank + j * topology.gpus_per_node) % (nodes * topology.gpus_per_node);
      if (peer >= ranks) continue;
      zone->add_route(p.ranks.back()->get_netpoint(), p.nodes[peer / topology.gpus_per_node]->get_netpoint(), nullptr,
                      nullptr, {sg4::LinkInRoute(p.up[rank / gpus_per_nic]), sg4::LinkInRoute(p.down[peer / gpus_per_nic])},
                      false);
    }
  }
  if (flows.competing_bytes_per_nic > 0 && nodes > 1)
    for (int k = 0; k < nics; ++k) {
      p.nic_hosts.push_back(zone->create_host("step" + std::to_string(k), host_speed_flops));
      const int next = (k + topology.nics_per_node) % nics;
      zone->add_route(p.nic_hosts[k]->get_netpoint(), p.nodes[next / topology.nics_per_node]->get_netpoint(), nullptr,
                      nullptr, {sg4::LinkInRoute(p.up[k]), sg4::LinkInRoute(p.down[next])}, false);
    }
  zone->seal();
  return p;
}

}  // namespace

CheckpointFlowTimes simulate_checkpoint_flows(const CheckpointFlows& flows, const Topology& topology) {
  const std::string result = run_in_child([&](const ProgressSender&) {
    sg4::Engine engine("simtrain-checkpoint");
    configure_simgrid();
    const int ranks = static_cast<int>(flows.bytes_per_rank.size());
    const int gpus_per_nic = topology.gpus_per_node / topology.nics_per_node;
    const int nics = (ranks + gpus_per_nic - 1) / gpus_per_nic;
    const Platform p = build_platform(flows, topology, nics);
    const int nodes = static_cast<int>(p.nodes.size());
    std::vector<HostTransfer> checkpoint, competing;
    for (int rank = 0; rank < ranks; ++rank) {
      const auto bytes = static_cast<uint64_t>(flows.bytes_per_rank[rank]);
      if (bytes == 0) continue;
      if (flows.peer_nodes == 0) checkpoint.push_back({p.ranks[rank], p.storage, bytes});
      for (int j = 1; j <= flows.peer_nodes && j < nodes; ++j) {
        const int peer = (rank + j * topology.gpus_per_node) % (nodes * topology.gpus_per_node);
        if (peer < ranks) checkpoint.push_back({p.ranks[rank], p.nodes[peer / topology.gpus_per_node], bytes});
      }
    }
    for (int k = 0; k < static_cast<int>(p.nic_hosts.size()); ++k) {
      const int next = (k + topology.nics_per_node) % nics;
      competing.push_back({p.nic_hosts[k], p.nodes[next / topology.nics_per_node],
                           static_cast<uint64_t>(flows.competing_bytes_per_nic)});
    }
    std::vector<sg4::Host*> destinations{p.storage};
    destinations.insert(destinations.end(), p.nodes.begin(), p.nodes.end());
    const HostTransfers transfers(destinations);
    CheckpointFlowTimes times;
    auto group = [&](const std::vector<HostTransfer>& list, double& end) {
      sg4::Actor::create("flows", p.storage, [&transfers, &list, &end] {
        sg4::Comm::wait_all(transfers.start(list));
        end = sg4::Engine::get_clock();
      });
    };
    group(checkpoint, times.checkpoint_seconds);
    if (!competing.empty()) group(competing, times.competing_seconds);
    engine.run();
    return std::string(reinterpret_cast<const char*>(&times), sizeof times);
  });
  CheckpointFlowTimes times;
  std::memcpy(&times, result.data(), std::min(result.size(), sizeof times));
  return times;
}

double storage_transfer_seconds(const std::vector<double>& bytes_per_rank, const Topology& topology,
                                double storage_bytes_per_second, double storage_latency_seconds) {
  CheckpointFlows flows;
  flows.bytes_per_rank = bytes_per_rank;
  flows.storage_bytes_per_second = storage_bytes_per_second;
  flows.storage_latency_seconds = storage_latency_seconds;
  return simulate_checkpoint_flows(flows, topology).checkpoint_seconds;
}

}  // namespace simtrain
