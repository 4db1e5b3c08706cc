#include "sim/network/collective_plan.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace simtrain {

std::string to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::pairwise: return "pairwise";
    case Algorithm::gloo_ring: return "gloo_ring";
  }
  return "unknown";
}

std::optional<Algorithm> parse_allreduce_algorithm(const std::string& text) {
  if (text == "ring") return Algorithm::ring;
  if (text == "tree") return Algorithm::tree;
  return std::nullopt;
}

double max_hop_latency(const std::vector<Flow>& flows, const Fabric& fabric) {
  double latency = 0;
  for (const Flow& f : flows) latency = std::max(latency, fabric.route_latency_seconds(f.src, f.dst));
  return latency;
}

CollectivePlan plan_collective(TaskKind kind, const std::vector<int>& ranks, double bytes, int count,
                               Algorithm algorithm, const Fabric& fabric) {
  if (ranks.size() < 2) return {};
  if (kind == TaskKind::ALLTOALL) return alltoall_plan(ranks, bytes, count, fabric);
  if (kind == TaskKind::ALLREDUCE && algorithm == Algorithm::tree) return tree_plan(ranks, bytes, count, fabric);
  if (kind == TaskKind::ALLREDUCE && algorithm == Algorithm::gloo_ring) return gloo_ring_plan(ranks, bytes, count, fabric);
  return ring_plan(kind, ranks, bytes, count, fabric);
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
  for (const Flow& f : plan.flows)
    if (f.max_bytes_per_second > 0) seconds = std::max(seconds, f.bytes / f.max_bytes_per_second);
  return seconds + plan.latency_seconds;
}

Algorithm choose_allreduce_algorithm(const std::vector<int>& ranks, double bytes, const Fabric& fabric) {
  const double ring = closed_form_seconds(ring_plan(TaskKind::ALLREDUCE, ranks, bytes, 1, fabric), fabric);
  const double tree = closed_form_seconds(tree_plan(ranks, bytes, 1, fabric), fabric);
  return tree < ring ? Algorithm::tree : Algorithm::ring;
}

}  // namespace simtrain
