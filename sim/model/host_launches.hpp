#pragma once
// What the host does for a compute Work: how many GPU kernels its ops
// launch as Megatron-Core 0.15 and Transformer Engine 2.9 run them, how long
// the host takes to launch them (eager PyTorch ops, Transformer Engine's C++
// calls, Triton kernels; one graph launch for the kernels a CUDA graph scope
// captures), and how often the host waits for the GPU inside the work (the
// alltoall token dispatcher's tokens-per-expert device-to-host copy, the
// flex dispatcher's DeepEP dispatch polling its received-token count,
// masked_select's nonzero). Counts, constants and their sources: docs/host.md
// and the table in host_launches.cpp.
#include <span>
#include <string>
#include <vector>

#include "sim/model/workload.hpp"
#include "sim/scenario/host_settings.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// Host seconds per launch, by how the kernel is launched (sources beside
// the values in host_launches.cpp).
struct HostLaunchSeconds {
  double python_forward;   // a forward PyTorch/TE call from Python that records an autograd node
  double python_backward;  // a call from a Python autograd Function's backward (TE, Megatron)
  double cpp_backward;     // a call from PyTorch's C++ autograd engine (ATen backward formulas)
  double follow_on;        // a further kernel launched inside the same native call
  double triton;           // a Triton kernel through its Python launcher
  double graph;            // one CUDA graph replay from Python
};
// The cited figures.
const HostLaunchSeconds& host_launch_seconds();
// As measured by bench/launch_rate_probe.py where `profile` has a figure
// (python_no_grad stands for python_backward and, scaled from the cited
// figure by the same ratio, for cpp_backward and follow_on, which the probe
// does not time apart); the cited figures elsewhere.
HostLaunchSeconds host_launch_seconds(const HostLaunchProfile& profile);
// A host-device synchronisation's own latency, beyond waiting for the GPU:
// the probe's round trip less the copy's launch (counted among the
// kernels); 0 without a measurement (no published figure: docs/host.md).
double host_sync_seconds(const HostLaunchProfile& profile);

struct HostWork {
  int kernels = 0;          // GPU kernels (and copies) the work's ops launch
  double launch_seconds = 0;  // host time to launch them; a captured scope's kernels cost one graph launch
  int syncs = 0;            // times the host waits for the GPU inside the work
  int graph_launches = 0;   // CUDA graph replays among the launches
};

// The host's side of a compute Work's ops (forward, backward or recompute
// ops of the workload; the optimizer's). Throws std::invalid_argument for
// an op name the table does not know (a test runs every shipped scenario's
// ops through it), InputError for a CUDA graph scope that cannot capture the
// scenario's layers (moe and full_iteration need a drop-and-pad MoE layer:
// a dropless one syncs).
HostWork host_work(std::span<const Op> ops, const Scenario& scenario, const HostSettings& settings);
// The same under the scenario's own software settings.
HostWork host_work(std::span<const Op> ops, const Scenario& scenario);

}  // namespace simtrain
