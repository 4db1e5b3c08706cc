#include "sim/network/collective_plan.hpp"

namespace simtrain {

// Gloo's ring all-reduce through the hosts: each rank copies the bucket to
// pinned host memory, sends to its successor over one TCP connection (2(n-1)
// steps: reduce-scatter, then all-gather; one ring in group order, no NCCL
// channels), sums what it receives on the CPU, and copies the result back.
// The flows cross the fabric as NCCL's do, each bounded by what one
// connection carries (GlooHostPath::tcp_bytes_per_second); the copies and
// the sums, which the transfers wait for, add to the latency.
CollectivePlan gloo_ring_plan(const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric,
                              const GlooHostPath& host) {
  const int n = static_cast<int>(ranks.size());
  const int steps = 2 * (n - 1);
  CollectivePlan plan;
  plan.algorithm = Algorithm::gloo_ring;
  for (int i = 0; i < n; ++i)
    plan.flows.push_back({ranks[i], ranks[(i + 1) % n], count * bytes * steps / n, host.tcp_bytes_per_second()});
  plan.step_latency_seconds = max_hop_latency(plan.flows, fabric);
  plan.latency_seconds =
      count * (steps * plan.step_latency_seconds + host.staging_seconds(bytes) + host.reduction_seconds(bytes, n));
  return plan;
}

}  // namespace simtrain
