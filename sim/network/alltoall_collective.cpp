#include "sim/network/collective_plan.hpp"

namespace simtrain {

// All-to-all as NCCL runs it (ncclSend and ncclRecv to every peer in one
// group, as nccl-tests' alltoall_perf does): each rank's `bytes` are n
// chunks, chunk j for rank j; a rank keeps its own and sends the other n-1
// at once, so (n-1)/n of the buffer leaves every rank and as much arrives.
// The transfers run side by side, not in steps: one route's latency (the
// slowest) is the whole algorithm's.
CollectivePlan alltoall_plan(const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric) {
  const double chunk_bytes = count * bytes / static_cast<double>(ranks.size());
  CollectivePlan plan;
  plan.algorithm = Algorithm::pairwise;
  for (int src : ranks)
    for (int dst : ranks)
      if (src != dst) plan.flows.push_back({src, dst, chunk_bytes});
  plan.step_latency_seconds = max_hop_latency(plan.flows, fabric);
  plan.latency_seconds = count * plan.step_latency_seconds;
  return plan;
}

}  // namespace simtrain
