#include "sim/network/collective_plan.hpp"

#include <algorithm>
#include <map>

namespace simtrain {

std::string to_string(Algorithm algorithm) { return algorithm == Algorithm::ring ? "ring" : "tree"; }

namespace {

double max_hop_latency(const std::vector<Flow>& flows, const Fabric& fabric) {
  double latency = 0;
  for (const Flow& f : flows) latency = std::max(latency, fabric.route_latency_seconds(f.src, f.dst));
  return latency;
}

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

}  // namespace

CollectivePlan plan_collective(TaskKind kind, const std::vector<int>& ranks, double bytes, int count,
                               Algorithm algorithm, const Fabric& fabric) {
  if (ranks.size() < 2) return {};
  if (kind == TaskKind::ALLREDUCE && algorithm == Algorithm::tree) return tree_plan(ranks, bytes, count, fabric);
  return ring_plan(kind, ranks, bytes, count, fabric);
}

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

std::vector<std::pair<int, double>> link_loads(const CollectivePlan& plan, const Fabric& fabric) {
  std::map<int, double> load;
  for (const Flow& f : plan.flows)
    for (int link : fabric.route(f.src, f.dst)) load[link] += f.bytes;
  return {load.begin(), load.end()};
}

double closed_form_seconds(const CollectivePlan& plan, const Fabric& fabric) {
  double seconds = 0;
  for (const auto& [link, bytes] : link_loads(plan, fabric))
    seconds = std::max(seconds, bytes / fabric.links()[link].bytes_per_second);
  return seconds + plan.latency_seconds;
}

Algorithm choose_allreduce_algorithm(const std::vector<int>& ranks, double bytes, const Fabric& fabric) {
  const double ring = closed_form_seconds(ring_plan(TaskKind::ALLREDUCE, ranks, bytes, 1, fabric), fabric);
  const double tree = closed_form_seconds(tree_plan(ranks, bytes, 1, fabric), fabric);
  return tree < ring ? Algorithm::tree : Algorithm::ring;
}

}  // namespace simtrain
