#include "sim/network/collective_plan.hpp"

namespace simtrain {

// Double binary tree (NCCL): two complementary trees each reduce and then
// broadcast half of the buffer, pipelined, so every edge carries half the
// buffer each way.
CollectivePlan tree_plan(const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric) {
  const int n = static_cast<int>(ranks.size());
  CollectivePlan plan;
  plan.algorithm = Algorithm::tree;
  for (int tree = 0; tree < 2; ++tree)
    for (int i = 1; i < n; ++i) {
      const int parent = (i - 1) / 2;
      auto at = [&](int position) { return ranks[tree == 0 ? position : n - 1 - position]; };
      plan.flows.push_back({at(i), at(parent), count * bytes / 2});
      plan.flows.push_back({at(parent), at(i), count * bytes / 2});
    }
  int depth = 0;
  while ((2 << depth) - 1 < n) ++depth;  // levels below the root
  plan.step_latency_seconds = max_hop_latency(plan.flows, fabric);
  plan.latency_seconds = count * 2 * depth * plan.step_latency_seconds;
  return plan;
}

}  // namespace simtrain
