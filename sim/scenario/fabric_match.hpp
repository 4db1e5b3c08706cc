#pragma once
// Whether a GPU sits on a system built for it. A built-in topology is one
// vendor system (DGX H100's NVLink 4 and NDR, DGX A100's NVLink 3 and HDR):
// another GPU on it keeps the topology's NVLink figures, not its own, which
// a user comparing GPU types should be told.
#include <optional>
#include <string>

#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/topology.hpp"

namespace simtrain {

// The built-in topology built for the GPU, of the same kind as `like` if one
// is (else of any kind); none if no built-in topology names the GPU.
std::optional<std::string> builtin_topology_for(const std::string& gpu, const Topology& like);

// "GPU A100-80GB on topology dgx-h100-superpod built for H100-SXM, H200:
// NVLink figures of the topology kept (450 GB/s per GPU per direction); the
// built-in system for A100-80GB is dgx-a100-superpod (--set
// cluster.topology=dgx-a100-superpod)", or "" where the topology was built
// for the GPU or names no GPU it was built for.
std::string fabric_mismatch(const std::string& gpu, const Topology& topology);

}  // namespace simtrain
