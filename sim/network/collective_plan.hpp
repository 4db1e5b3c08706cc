#pragma once
// How NCCL moves a collective's bytes: the flows of a ring, of a double
// binary tree or of an all-to-all's pairwise exchange over a group's ranks,
// with the latency the algorithm adds.
// The SimGrid replay sends these flows over the topology's links; a closed
// form evaluates them where no other traffic shares those links.
#include <string>
#include <vector>

#include "sim/model/task_kind.hpp"
#include "sim/network/collective_algorithm.hpp"
#include "sim/network/fabric.hpp"
#include "sim/network/gloo_host_path.hpp"

namespace simtrain {

struct Flow {
  int src = 0, dst = 0;  // ranks (one GPU each)
  double bytes = 0;
  // The most the flow's sender moves per second whatever the links leave it
  // (one TCP connection under Gloo); 0: no bound but the links'.
  double max_bytes_per_second = 0;
};

struct CollectivePlan {
  Algorithm algorithm = Algorithm::ring;
  std::vector<Flow> flows;       // all concurrent
  double latency_seconds = 0;    // per-step latencies of the whole algorithm
  double step_latency_seconds = 0;  // one step (the slowest hop)
};

// `count` back-to-back collectives of `bytes` each over `ranks` (ring order).
// Reduce-scatter and all-gather always use the ring, as NCCL does, and
// all-to-all the pairwise exchange; all-reduce uses `algorithm`. `bytes` is
// what each rank holds: the buffer of an all-reduce, the input of a
// reduce-scatter, the output of an all-gather, the send buffer of an
// all-to-all.
CollectivePlan plan_collective(TaskKind kind, const std::vector<int>& ranks, double bytes, int count,
                               Algorithm algorithm, const Fabric& fabric);

// A parameter-server group's push (REDUCESCATTER: every worker sends one
// shard of its `bytes` to each server) or pull (ALLGATHER: each server sends
// its shard back to every worker), `count` times; servers are fabric hosts
// num_gpus() .. num_gpus() + servers - 1. One step: the latency of the
// slowest route.
CollectivePlan parameter_server_plan(TaskKind kind, const std::vector<int>& workers, int servers, double bytes,
                                     int count, const Fabric& fabric);

// Bytes the plan's flows put on each link they cross, by link index.
std::vector<std::pair<int, double>> link_loads(const CollectivePlan& plan, const Fabric& fabric);

// Time of a plan when its flows share links only with each other: the most
// loaded link's bytes over its bandwidth (or a bounded flow's bytes over its
// bound, where longer), plus the latency.
double closed_form_seconds(const CollectivePlan& plan, const Fabric& fabric);

// Whether max-min sharing, which the replay's network model computes, ends
// the plan's flows (alone on their links) at closed_form_seconds: true when
// no flow has a bound of its own and each flow crosses a link at its
// bottleneck time (the largest load over bandwidth on its route) whose flows
// all carry its bytes in that same time. Each flow then runs at bytes / its
// bottleneck time from start to end: that saturates such a link, fits every
// other, and what ends first frees no link another flow is held by. An
// all-to-all inside an NVLink domain, over a rail's NICs or round a torus
// ring is so; one whose ranks' NICs carry flows within the rail and flows over
// an oversubscribed leaf uplink is not (the first end early and leave their
// share of the NIC to the others).
bool closed_form_is_exact(const CollectivePlan& plan, const Fabric& fabric);

// The algorithms, one file each (ring_collective.cpp, tree_collective.cpp,
// alltoall_collective.cpp, parameter_server_collective.cpp,
// gloo_collective.cpp), over the declarations above.
CollectivePlan ring_plan(TaskKind kind, const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric);
CollectivePlan tree_plan(const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric);
CollectivePlan alltoall_plan(const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric);
// An all-reduce under the gloo backend (gloo_host_path.hpp).
CollectivePlan gloo_ring_plan(const std::vector<int>& ranks, double bytes, int count, const Fabric& fabric,
                              const GlooHostPath& host = {});
// One step's latency: the slowest route among `flows`.
double max_hop_latency(const std::vector<Flow>& flows, const Fabric& fabric);

// NCCL's choice for all-reduce: the algorithm with the smaller closed-form time.
Algorithm choose_allreduce_algorithm(const std::vector<int>& ranks, double bytes, const Fabric& fabric);

}  // namespace simtrain
