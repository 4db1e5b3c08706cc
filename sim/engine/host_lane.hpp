#pragma once
// The host thread of a rank, which launches its kernels in program order: a
// kernel cannot start before its launch, launches cost host time, and a
// host-device synchronisation makes the host wait for the GPU. When the
// kernels run shorter than their launches the GPU waits for the host.
#include <vector>

#include "sim/model/host_launches.hpp"
#include "sim/program/program.hpp"

namespace simtrain {

// What the replay simulates of the hosts (ReplayOptions::host); no works:
// launches cost nothing, the host is not simulated.
struct HostModel {
  std::vector<HostWork> works;              // by Program work
  double communication_launch_seconds = 0;  // host time of one collective or send (an NCCL call)
  double sync_seconds = 0;                  // one synchronisation's own latency, once the GPU is done
  bool simulated() const { return !works.empty(); }
};

struct LaunchedWork {
  double gpu_end = 0;   // when the work's last kernel ends
  double host_end = 0;  // when the host has launched the last one (and returned from any sync)
};

// A work of `gpu_seconds` whose host begins launching it at `host_start`
// on a GPU free from `gpu_start`, its kernels alike (each gpu_seconds /
// kernels long, launched in launch_seconds / kernels): in each stretch
// between synchronisations of k kernels of d seconds launched t apart, the
// GPU ends at max(free + k d, first launch + k d, last launch + d), and a
// synchronisation returns `sync_seconds` after the GPU is done.
LaunchedWork launch_work(double host_start, double gpu_start, double gpu_seconds, const HostWork& launches,
                         double sync_seconds);

// Each work's launches as the scenario's software runs them
// (sim/model/host_launches.hpp), a collective's as one eager call.
HostModel host_model(const Program& program, const Scenario& scenario);

}  // namespace simtrain
