// Why the replay sends its flows through HostTransfers (sim/engine/host_transfers.hpp):
// every host of a star sends to the 63 others of its group of 64, four
// rounds, once with SimGrid's Comm::sendto_async and once with
// HostTransfers; prints wall seconds and the simulated end of each (the same
// network model, so the same simulated time).
//   simtrain_bench_simgrid_transfers [HOSTS...]   (default: 256 512)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/engine/host_transfers.hpp"
#include "sim/engine/simgrid_setup.hpp"

namespace sg4 = simgrid::s4u;

namespace {

constexpr int group_size = 64, rounds = 4;
constexpr uint64_t flow_bytes = 1'000'000;

struct Figures {
  double wall_seconds = 0, simulated_seconds = 0;
};

// One run in a child process (SimGrid has one engine per process).
Figures run(int hosts, bool with_host_transfers) {
  const std::string bytes = simtrain::run_in_child([&](const simtrain::ProgressSender&) {
    sg4::Engine engine("simgrid-transfers");
    simtrain::configure_simgrid();
    auto* zone = sg4::create_star_zone("star");
    std::vector<sg4::Host*> host;
    for (int i = 0; i < hosts; ++i) {
      host.push_back(zone->create_host("h" + std::to_string(i), 1e9));
      sg4::Link* link = zone->create_split_duplex_link("l" + std::to_string(i), 50e9)->set_latency(1e-6)->seal();
      zone->add_route(host.back()->get_netpoint(), nullptr, nullptr, nullptr,
                      {{link, sg4::LinkInRoute::Direction::UP}}, true);
    }
    zone->seal();
    const simtrain::HostTransfers transfers(host);
    for (int h = 0; h < hosts; ++h)
      sg4::Actor::create("sender", host[h], [&, h] {
        const int first = h / group_size * group_size;
        for (int r = 0; r < rounds; ++r) {
          std::vector<simtrain::HostTransfer> sends;
          for (int d = first; d < first + group_size && d < hosts; ++d)
            if (d != h) sends.push_back({host[h], host[d], flow_bytes});
          std::vector<sg4::CommPtr> comms;
          if (with_host_transfers) {
            comms = transfers.start(sends);
          } else {
            for (const simtrain::HostTransfer& s : sends) comms.push_back(sg4::Comm::sendto_async(s.from, s.to, s.bytes));
          }
          sg4::Comm::wait_all(comms);
        }
      });
    const auto start = std::chrono::steady_clock::now();
    engine.run();
    const Figures figures{std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                          sg4::Engine::get_clock()};
    return std::string(reinterpret_cast<const char*>(&figures), sizeof figures);
  });
  Figures figures;
  if (bytes.size() == sizeof figures) figures = *reinterpret_cast<const Figures*>(bytes.data());
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {256, 512};
  std::printf("%6s %10s  %22s  %22s\n", "hosts", "flows", "sendto_async wall, sim", "HostTransfers wall, sim");
  for (int hosts : sizes) {
    if (hosts < 2) {
      std::fprintf(stderr, "simtrain_bench_simgrid_transfers: %d: expected at least 2 hosts\n", hosts);
      return 2;
    }
    const Figures detached = run(hosts, false), mailbox = run(hosts, true);
    const long flows = static_cast<long>(hosts) * (std::min(hosts, group_size) - 1) * rounds;
    std::printf("%6d %10ld  %9.2f s %10.6f s  %9.2f s %10.6f s\n", hosts, flows, detached.wall_seconds,
                detached.simulated_seconds, mailbox.wall_seconds, mailbox.simulated_seconds);
  }
  return 0;
}
