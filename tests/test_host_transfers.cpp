// HostTransfers (sim/engine/host_transfers.hpp): each transfer leaves from
// its own source host whatever host the posting actor is on, all start at
// once, and they share links as max-min sharing says.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/base/child_process.hpp"
#include "sim/engine/host_transfers.hpp"
#include "sim/engine/simgrid_setup.hpp"

namespace sg4 = simgrid::s4u;

namespace simtrain {
namespace {

constexpr double link_bytes_per_second = 1e9, latency_seconds = 1e-6;

struct Ends {
  double first = 0, last = 0;  // simulated seconds at which the first and the last transfer ended
  bool back_home = false;      // the posting actor is on its own host again
};

// Hosts 0..n-1 behind one link each on a star, `pairs` transfers of `bytes`
// (by host index) posted by an actor on host n-1, whose link is 10 times slower.
Ends transfer(int hosts, const std::vector<std::pair<int, int>>& pairs, uint64_t bytes) {
  const std::string result = run_in_child([&](const ProgressSender&) {
    sg4::Engine engine("host-transfers-test");
    configure_simgrid();
    auto* zone = sg4::create_star_zone("star");
    std::vector<sg4::Host*> host;
    for (int i = 0; i < hosts; ++i) {
      host.push_back(zone->create_host("h" + std::to_string(i), 1e9));
      const double bytes_per_second = link_bytes_per_second / (i == hosts - 1 ? 10 : 1);
      sg4::Link* link = zone->create_split_duplex_link("l" + std::to_string(i), bytes_per_second)
                            ->set_latency(latency_seconds)
                            ->seal();
      zone->add_route(host.back()->get_netpoint(), nullptr, nullptr, nullptr,
                      {{link, sg4::LinkInRoute::Direction::UP}}, true);
    }
    zone->seal();
    const HostTransfers transfers(host);
    Ends ends;
    sg4::Actor::create("poster", host.back(), [&] {
      std::vector<HostTransfer> posts;
      for (const auto& [from, to] : pairs) posts.push_back({host[from], host[to], bytes});
      std::vector<sg4::CommPtr> comms = transfers.start(posts);
      ends.back_home = sg4::this_actor::get_host() == host.back();
      ends.first = -1;
      while (!comms.empty()) {
        comms.erase(comms.begin() + sg4::Comm::wait_any(comms));
        if (ends.first < 0) ends.first = sg4::Engine::get_clock();
      }
      ends.last = sg4::Engine::get_clock();
    });
    engine.run();
    return std::string(reinterpret_cast<const char*>(&ends), sizeof ends);
  });
  Ends ends;
  std::memcpy(&ends, result.data(), sizeof ends);
  return ends;
}

TEST(HostTransfers, ATransferLeavesFromItsSourceNotFromThePostingActorsHost) {
  // Host 2 posts 0 -> 1: at the speed of links 0 and 1, not of host 2's slow one; then the poster is home again.
  const Ends ends = transfer(3, {{0, 1}}, 1'000'000);
  EXPECT_NEAR(ends.last, 1e6 / link_bytes_per_second + 2 * latency_seconds, 1e-12);
  EXPECT_TRUE(ends.back_home);
}

TEST(HostTransfers, TransfersIntoOneHostShareItsLinkAndEndTogether) {
  // Four senders into host 4: its link carries 4 MB at 1 GB/s; each sender's own link is not the bottleneck.
  const Ends ends = transfer(6, {{0, 4}, {1, 4}, {2, 4}, {3, 4}}, 1'000'000);
  EXPECT_NEAR(ends.first, 4e6 / link_bytes_per_second + 2 * latency_seconds, 1e-9);
  EXPECT_NEAR(ends.last, ends.first, 1e-12);
}

TEST(HostTransfers, DisjointTransfersRunSideBySide) {
  const Ends ends = transfer(5, {{0, 1}, {2, 3}}, 1'000'000);
  EXPECT_NEAR(ends.last, 1e6 / link_bytes_per_second + 2 * latency_seconds, 1e-12);
}

}  // namespace
}  // namespace simtrain
