#include "sim/engine/storage_transfer.hpp"

#include <cstring>
#include <map>
#include <string>

#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/engine/host_transfers.hpp"
#include "sim/engine/simgrid_setup.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {

double storage_transfer_seconds(const std::vector<double>& bytes_per_rank, const Topology& topology,
                                double storage_bytes_per_second, double storage_latency_seconds) {
  const std::string result = run_in_child([&](const ProgressSender&) {
    sg4::Engine engine("simtrain-storage");
    configure_simgrid();
    auto* zone = sg4::create_full_zone("storage");
    sg4::Host* storage = zone->create_host("storage", host_speed_flops);
    sg4::Link* storage_link =
        zone->create_link("storage", storage_bytes_per_second)->set_latency(storage_latency_seconds)->seal();
    const double nic_bytes_per_second = topology.nic_bytes_per_second * topology.network_efficiency;
    const int gpus_per_nic = topology.gpus_per_node / topology.nics_per_node;
    std::map<int, sg4::Link*> nics;
    std::vector<std::pair<sg4::Host*, double>> writers;
    for (size_t rank = 0; rank < bytes_per_rank.size(); ++rank) {
      if (bytes_per_rank[rank] <= 0) continue;
      const int nic = static_cast<int>(rank) / gpus_per_nic;  // GPUs behind one NIC share it
      if (!nics.count(nic))
        nics[nic] = zone->create_link("nic" + std::to_string(nic), nic_bytes_per_second)->seal();
      sg4::Host* host = zone->create_host("gpu" + std::to_string(rank), host_speed_flops);
      zone->add_route(host->get_netpoint(), storage->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(nics[nic]), sg4::LinkInRoute(storage_link)}, true);
      writers.emplace_back(host, bytes_per_rank[rank]);
    }
    zone->seal();
    double end = 0;
    const HostTransfers transfers({storage});
    sg4::Actor::create("writers", storage, [&] {
      std::vector<HostTransfer> writes;
      for (const auto& [host, bytes] : writers) writes.push_back({host, storage, static_cast<uint64_t>(bytes)});
      sg4::Comm::wait_all(transfers.start(writes));
      end = sg4::Engine::get_clock();
    });
    engine.run();
    return std::string(reinterpret_cast<const char*>(&end), sizeof end);
  });
  double seconds = 0;
  std::memcpy(&seconds, result.data(), std::min(result.size(), sizeof seconds));
  return seconds;
}

}  // namespace simtrain
