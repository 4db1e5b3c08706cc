#pragma once
// The order in which each rank's communication nodes must be issued for a
// consumer that runs one communication node at a time per rank, as ASTRA-sim
// does (astra-sim/astra-sim 8ee4478):
// - astra-sim/workload/Workload.cc:49 gives each rank one HardwareResource;
//   HardwareResource.cc:36-61 lets one COMP_NODE and one communication node
//   (COMM_COLL_NODE or COMM_SEND_NODE) be in flight at once, a COMM_RECV_NODE
//   holding nothing (HardwareResource.cc:51-53, 101-106);
// - Workload.cc:136-150 issues whatever is dependency-free (data_deps and
//   ctrl_deps both, chakra feeder_v3 common.h USE_DATA_DEPS/USE_CTRL_DEPS) in
//   ascending node id, if its resource is free, and a communication node holds
//   its resource until it completes (Workload.cc:463-498, 505-546): a
//   collective when every member of its group has issued it, a send after its
//   transfer time whether or not the receive is posted
//   (network_frontend/analytical/common/CommonNetworkApi.cc:34-64).
// So on the last pipeline stage, an embedding all-reduce that becomes ready
// with the last `send grad` and has the lower id holds the rank's one
// communication slot waiting for the first stage, which waits for the
// gradients the held send would start: a deadlock.
//
// Here: one order of all the Program's tasks that respects its dependencies
// and its streams' order (a collective is one event for all its group's
// members, a SEND an event before its RECV), earliest estimated start first
// (compute at its duration, communication free); each rank's COLL and SEND
// tasks in that order form one chain. A consumer that waits for the chain
// cannot deadlock: the first unfinished event of the order has everything it
// waits for done, and on each of its ranks the communication slot free.
#include <cstdint>
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

// Whether a task holds ASTRA-sim's one communication slot of its rank while it runs.
bool holds_communication_slot(TaskKind kind);

// For each task id, the task holding the communication slot before it on its
// rank in that order (-1: none, or not a slot holder). `work_seconds[w]` is
// the duration of Program::works[w]. Throws std::logic_error where the
// Program's dependencies and streams form a cycle.
std::vector<int32_t> communication_predecessors(const Program& program, const std::vector<double>& work_seconds);

}  // namespace simtrain
