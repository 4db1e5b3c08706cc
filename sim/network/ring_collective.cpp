#include "sim/network/collective_plan.hpp"

#include <algorithm>

namespace simtrain {

// Ring: every rank sends to its successor; an all-reduce moves 2(n-1)/n of
// the buffer over each edge in 2(n-1) steps, reduce-scatter and all-gather
// (n-1)/n in n-1 steps. When a ring passes through several GPUs of each node,
// NCCL runs one ring per channel, each entering and leaving the node at other
// GPUs so that every NIC carries a share: channel c visits each node's GPUs
// rotated by c, and carries 1/channels of the buffer.
CollectivePlan ring_plan(TaskKind kind, const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric) {
  const int n = static_cast<int>(ranks.size());
  const int steps = kind == TaskKind::ALLREDUCE ? 2 * (n - 1) : n - 1;
  std::vector<std::vector<int>> nodes;  // members of each node, in ring order
  for (int rank : ranks) {
    if (nodes.empty() || fabric.node_of(nodes.back().front()) != fabric.node_of(rank)) nodes.emplace_back();
    nodes.back().push_back(rank);
  }
  size_t channels = 1;
  if (nodes.size() > 1)
    for (const auto& members : nodes) channels = std::max(channels, members.size());
  CollectivePlan plan;
  plan.algorithm = Algorithm::ring;
  for (size_t c = 0; c < channels; ++c) {
    std::vector<int> order;
    for (const auto& members : nodes)
      for (size_t i = 0; i < members.size(); ++i) order.push_back(members[(i + c) % members.size()]);
    for (int i = 0; i < n; ++i)
      plan.flows.push_back({order[i], order[(i + 1) % n], count * bytes * steps / n / channels});
  }
  plan.step_latency_seconds = max_hop_latency(plan.flows, fabric);
  plan.latency_seconds = count * steps * plan.step_latency_seconds;
  return plan;
}

}  // namespace simtrain
