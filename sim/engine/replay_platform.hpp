#pragma once
// The SimGrid platform a replay runs on: a host per simulated GPU and per
// parameter server, a controller host, and the fabric links that routes
// cross, each at the capacity the replay gives it.
#include <compare>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/network/fabric.hpp"

namespace simtrain {

// A link of a route, listed `repeats` times: SimGrid then counts a flow over
// it `repeats` times against its capacity (one flow standing for several).
struct WeightedLink {
  int link = 0;
  int repeats = 1;
  auto operator<=>(const WeightedLink&) const = default;
};

// A route between two fabric hosts (GPUs by rank, then parameter servers),
// over weighted links, with the latency of the fabric's route.
struct PlatformRoute {
  int src = 0, dst = 0;
  std::vector<WeightedLink> links;
  double latency_seconds = 0;
  bool operator<(const PlatformRoute& other) const;
};

struct ReplayPlatform {
  std::vector<simgrid::s4u::Host*> hosts;        // GPUs by rank, then the parameter servers; null where no simulated flow or task needs it
  simgrid::s4u::Host* controller = nullptr;      // runs what is no GPU's work (the failure injector)
  std::vector<simgrid::s4u::Link*> links;        // by fabric index; null where no route uses the link
  // By route (as given): the hosts a flow over it goes from and to. A second
  // route between the same two hosts leaves from another host of the source's
  // (SimGrid holds one route per pair of hosts).
  std::vector<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>> route_hosts;
};

// Creates the platform in one full zone: a host for each GPU where
// `needed_gpu[rank]`, each parameter server and the controller; each of
// `routes`, its latency on a link of its own (bandwidth links have none, so
// that repeating one adds no latency); each link at
// `link_bytes_per_second[index]`. Call it once configure_simgrid has run.
ReplayPlatform build_replay_platform(const Fabric& fabric, const std::vector<char>& needed_gpu, int servers,
                                     const std::vector<PlatformRoute>& routes,
                                     const std::vector<double>& link_bytes_per_second);

}  // namespace simtrain
