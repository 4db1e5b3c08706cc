#pragma once
// A Fabric written as a SimGrid platform file (platform version 4.1): one
// Full zone holding a host per GPU (gpu0, gpu1, ... in rank order), every
// link a route uses (at its achievable bandwidth and latency) and an explicit
// route between every ordered pair of GPUs. Read back as a topology of kind
// simgrid_platform, it gives the same links and routes, so the same step
// times; a bundle stays one link of the bundle's bandwidth.
#include <ostream>
#include <string>

#include "sim/network/fabric.hpp"

namespace simtrain {

// `origin` is said in a comment at the top (e.g. "dgx-h100-superpod, 16 GPUs").
void write_platform_xml(std::ostream& out, const Fabric& fabric, const std::string& origin);

}  // namespace simtrain
