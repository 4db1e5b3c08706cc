#include "sim/network/collective_plan.hpp"

#include <algorithm>
#include <cmath>
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

bool closed_form_is_exact(const CollectivePlan& plan, const Fabric& fabric) {
  std::map<int, double> seconds_of_link;  // its load over its bandwidth
  for (const auto& [link, bytes] : link_loads(plan, fabric))
    seconds_of_link[link] = bytes / fabric.links()[link].bytes_per_second;
  std::vector<std::vector<int>> routes;
  std::vector<double> bottleneck_seconds;  // by flow: the most loaded link's time on its route
  for (const Flow& f : plan.flows) {
    if (f.max_bytes_per_second > 0) return false;
    routes.push_back(fabric.route(f.src, f.dst));
    double seconds = 0;
    for (int link : routes.back()) seconds = std::max(seconds, seconds_of_link[link]);
    bottleneck_seconds.push_back(seconds);
  }
  const auto same = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(a, b); };
  // By link: whether its flows all carry the first one's bytes in the first one's bottleneck time.
  std::map<int, std::pair<size_t, bool>> uniform;  // first flow, uniform
  for (size_t f = 0; f < plan.flows.size(); ++f)
    for (int link : routes[f]) {
      auto [it, first] = uniform.try_emplace(link, f, true);
      const size_t g = it->second.first;
      it->second.second = it->second.second && plan.flows[g].bytes == plan.flows[f].bytes &&
                          same(bottleneck_seconds[g], bottleneck_seconds[f]);
    }
  for (size_t f = 0; f < plan.flows.size(); ++f) {
    const auto saturates = [&](int link) {
      return uniform[link].second && same(seconds_of_link[link], bottleneck_seconds[f]);
    };
    if (std::none_of(routes[f].begin(), routes[f].end(), saturates)) return false;
  }
  return true;
}

Algorithm choose_allreduce_algorithm(const std::vector<int>& ranks, double bytes, const Fabric& fabric) {
  const double ring = closed_form_seconds(ring_plan(TaskKind::ALLREDUCE, ranks, bytes, 1, fabric), fabric);
  const double tree = closed_form_seconds(tree_plan(ranks, bytes, 1, fabric), fabric);
  return tree < ring ? Algorithm::tree : Algorithm::ring;
}

}  // namespace simtrain
