#pragma once
// Host seconds per launch measured on the machine that will train, as
// bench/launch_rate_probe.py writes them (--json), in place of the published
// figures sim/model/host_launches.cpp cites (docs/host.md).
#include <optional>
#include <string>

namespace simtrain {

// What the probe measured; a figure it skipped (Triton not installed) stays empty.
struct HostLaunchProfile {
  std::string file;    // resolved path; empty: no profile, the cited figures
  std::string device;  // the GPU the probe ran on, as PyTorch names it
  std::optional<double> python_forward;   // an eager op from Python recording an autograd node
  std::optional<double> python_no_grad;   // the same op without autograd
  std::optional<double> triton;           // a Triton kernel through its Python launcher
  std::optional<double> graph_replay;     // a CUDA graph of one kernel replayed from Python
  std::optional<double> sync_round_trip;  // a few integers copied to the host and waited for, the GPU idle
};

// Reads the probe's JSON: {"device": ..., "seconds_per_launch": {"python_forward": s, ...}}.
// Throws InputError naming the file and the field: not JSON, no
// seconds_per_launch object, a figure that is not a number of seconds
// above 0 and below one, none of the figures above.
HostLaunchProfile read_host_launch_profile(const std::string& path);

}  // namespace simtrain
