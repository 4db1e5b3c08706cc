#include "sim/engine/host_lane.hpp"

#include <algorithm>

namespace simtrain {

LaunchedWork launch_work(double host_start, double gpu_start, double gpu_seconds, const HostWork& launches,
                         double sync_seconds) {
  if (launches.kernels <= 0) return {std::max(host_start, gpu_start) + gpu_seconds, host_start};
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

HostModel host_model(const Program& program, const Scenario& scenario) {
  HostModel model;
  for (const Work& work : program.works) model.works.push_back(host_work(work.ops, scenario));
  // No measurement of an NCCL call's host time was found: the nearest
  // figure, a forward eager op's (docs/host.md).
  model.communication_launch_seconds = host_launch_seconds(scenario.cluster.host_launch_profile).python_forward;
  model.sync_seconds = host_sync_seconds(scenario.cluster.host_launch_profile);
  return model;
}

}  // namespace simtrain
