#include <algorithm>
#include <tuple>
#include <utility>

#include "sim/network/collective_plan.hpp"

namespace simtrain {

namespace {

// What a route looks like, whichever GPUs it joins: its links' bandwidths and latencies in order.
std::vector<std::pair<double, double>> route_shape(const Fabric& fabric, int src, int dst) {
  std::vector<std::pair<double, double>> shape;
  for (int link : fabric.route(src, dst))
    shape.emplace_back(fabric.links()[link].bytes_per_second, fabric.links()[link].latency_seconds);
  return shape;
}

}  // namespace

// All-to-all as NCCL runs it (ncclSend and ncclRecv to every peer in one
// group, as nccl-tests' alltoall_perf does): each rank's `bytes` are n
// chunks, chunk j for rank j; a rank keeps its own and sends the other n-1
// at once, so (n-1)/n of the buffer leaves every rank and as much arrives.
// The transfers run side by side, not in steps: one route's latency (the
// slowest) is the whole algorithm's.
//
// Each rank lists its flows by the shape of their routes, then by how far
// round the group the peer is. The order changes no time (the flows run at
// once); it puts alike flows at one place of every rank's list, which is
// where the replay's symmetry reduction (sim/engine/replica_classes.hpp)
// looks for them: the ranks of an expert group spread over nodes then
// differ only where their routes do.
CollectivePlan alltoall_plan(const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric) {
  const int n = static_cast<int>(ranks.size());
  const double chunk_bytes = count * bytes / static_cast<double>(n);
  CollectivePlan plan;
  plan.algorithm = Algorithm::pairwise;
  std::vector<std::tuple<std::vector<std::pair<double, double>>, int, int>> peers;  // shape, offset, rank
  for (int i = 0; i < n; ++i) {
    peers.clear();
    for (int offset = 1; offset < n; ++offset) {
      const int dst = ranks[(i + offset) % n];
      peers.emplace_back(route_shape(fabric, ranks[i], dst), offset, dst);
    }
    std::sort(peers.begin(), peers.end());
    for (const auto& [shape, offset, dst] : peers) plan.flows.push_back({ranks[i], dst, chunk_bytes});
  }
  plan.step_latency_seconds = max_hop_latency(plan.flows, fabric);
  plan.latency_seconds = count * plan.step_latency_seconds;
  return plan;
}

}  // namespace simtrain
