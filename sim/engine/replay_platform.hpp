#pragma once
// The SimGrid platform a replay runs on: a host per GPU and per parameter
// server, a controller host, and the fabric links that routes cross.
#include <set>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sim/network/fabric.hpp"

namespace simtrain {

struct ReplayPlatform {
  std::vector<simgrid::s4u::Host*> hosts;        // GPUs by rank, then the parameter servers
  simgrid::s4u::Host* controller = nullptr;      // runs what is no GPU's work (the failure injector)
  std::vector<simgrid::s4u::Link*> links;        // by fabric index; null where no route uses the link
};

// Creates the platform in one full zone, with a route from src to dst for
// each (src, dst) of `routed_pairs` (fabric host indices) and each link at
// `link_bytes_per_second[index]`. Call it once configure_simgrid has run.
ReplayPlatform build_replay_platform(const Fabric& fabric, int world_size, int servers,
                                     const std::set<std::pair<int, int>>& routed_pairs,
                                     const std::vector<double>& link_bytes_per_second);

}  // namespace simtrain
