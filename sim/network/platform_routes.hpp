#pragma once
// The links and routes of a SimGrid platform file, as SimGrid read them
// (sim/engine/platform_file.hpp): what a Fabric of kind simgrid_platform
// offers in place of the links and routes it builds for other kinds.
#include <string>
#include <vector>

#include "sim/network/fabric.hpp"  // LinkSpec

namespace simtrain {

struct PlatformRoutes {
  int gpus = 0;                          // the first hosts of the file, routed
  std::vector<LinkSpec> links;           // at the file's bandwidth and latency
  std::vector<std::vector<int>> routes;  // routes[src * gpus + dst]: link indices, in order

  const std::vector<int>& route(int src, int dst) const { return routes[static_cast<size_t>(src) * gpus + dst]; }
};

}  // namespace simtrain
