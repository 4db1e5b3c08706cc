#include "sim/network/collective_plan.hpp"

namespace simtrain {

// Parameter servers: each worker pushes one shard per server, or each server
// sends its shard back to every worker; one step.
CollectivePlan parameter_server_plan(TaskKind kind, const std::vector<int>& workers, int servers, double bytes,
                                     int count, const Fabric& fabric) {
  CollectivePlan plan;
  for (int worker : workers)
    for (int s = 0; s < servers; ++s) {
      const int server = fabric.num_gpus() + s;
      if (kind == TaskKind::REDUCESCATTER)
        plan.flows.push_back({worker, server, count * bytes / servers});
      else
        plan.flows.push_back({server, worker, count * bytes / servers});
    }
  plan.step_latency_seconds = max_hop_latency(plan.flows, fabric);
  plan.latency_seconds = count * plan.step_latency_seconds;
  return plan;
}

}  // namespace simtrain
