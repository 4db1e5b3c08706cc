#pragma once
// Which library carries the data-parallel gradient reductions, and the
// vendor of each GPU, which decides the libraries a cluster can use:
// - nccl: NCCL (RCCL, its port, on AMD GPUs), GPU to GPU over GPUDirect
//   RDMA; one library of one vendor, so every GPU must come from it.
// - gloo: PyTorch's Gloo backend over TCP, through the hosts: each bucket
//   copied to pinned host memory, all-reduced by the CPUs in a ring over TCP
//   and copied back (sim/network/gloo_collective.cpp); any vendor's GPU.
// The scenario's cluster.communication_backend and cluster.gpu_vendors
// (docs/scenario-format.md; docs/communication-backends.md for the model).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/base/json_fields.hpp"
#include "sim/scenario/gpu_spec.hpp"

namespace simtrain {

enum class CommunicationBackend { nccl, gloo };
std::string to_string(CommunicationBackend backend);  // "nccl", "gloo"

// The vendor of a built-in GPU ("AMD" for MI300X, "NVIDIA" for the others);
// "" for one the scenario describes (its vendor is not known).
std::string gpu_vendor(const GpuSpec& gpu);

// cluster.gpu_vendors: {"rank" or "first-last": "NVIDIA" | "AMD"}, the
// vendor of the GPUs of those ranks (their speed: cluster.gpu_speed_factors);
// the others are cluster.gpu's. Per rank; empty where the field is absent.
std::vector<std::string> parse_gpu_vendors(JsonFields& cluster, const GpuSpec& gpu, int64_t num_gpus);

struct Scenario;
// The backend against the cluster's vendors and the parallel layout; throws
// InputError naming the scenario file, the field and the reason: NCCL across
// vendors; with mixed vendors, a data-parallel replica (whose tensor-,
// context- and pipeline-parallel traffic only NCCL carries here) or an
// expert-parallel group spanning vendors; and Gloo where its model does not
// reach (reduce-scatters of ZeRO, hierarchical, tree or parameter-server
// sync, a GPU whose host link is not PCIe Gen5 x16).
void check_communication_backend(const Scenario& scenario);

}  // namespace simtrain
