#pragma once
// Reads a SimGrid platform file with SimGrid's own parser and routing: its
// hosts in document order are GPUs 0, 1, ..., and the route between each
// pair of them becomes a Fabric route over the file's links. The file is read
// in a forked child, as a process holds one SimGrid engine and every replay
// makes its own; the parent keeps only links and routes.
#include "sim/scenario/topology.hpp"

namespace simtrain {

// Routes grow with the square of the GPUs: a platform file routes at most these.
constexpr int max_platform_gpus = 1024;

// `topology` with its `platform` read for `num_gpus` GPUs if it is of kind
// simgrid_platform (already read for as many: as it is); any other kind as
// it is. Throws InputError naming the file when it cannot be read or parsed,
// holds fewer hosts than num_gpus, has no route between two of them, or has
// a link that simtrain cannot share as SimGrid would (FATPIPE, WIFI, NONLINEAR).
Topology with_platform_routes(const Topology& topology, int num_gpus);

}  // namespace simtrain
