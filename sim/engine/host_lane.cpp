#include "sim/engine/host_lane.hpp"

#include <algorithm>

namespace simtrain {

LaunchedWork launch_work(double host_start, double gpu_start, double gpu_seconds, const HostLaunches& launches,
                         double sync_seconds) {
  if (launches.kernels <= 0) return {gpu_start + gpu_seconds, host_start};
  const int kernels = launches.kernels;
  const int stretches = std::min(launches.syncs, kernels - 1) + 1;  // a sync sits between two kernels
  const double launch = launches.launch_seconds / kernels, run = gpu_seconds / kernels;
  double host = host_start, gpu = gpu_start;
  for (int s = 0; s < stretches; ++s) {
    const int k = kernels / stretches + (s < kernels % stretches ? 1 : 0);
    gpu = std::max({gpu + k * run, host + launch + k * run, host + k * launch + run});
    host += k * launch;
    if (s + 1 < stretches) host = std::max(host, gpu) + sync_seconds;
  }
  return {gpu, host};
}

}  // namespace simtrain
