#pragma once
// What each lane's actor sends through the network for each of its tasks
// (lanes: sim/engine/replay_lanes.hpp), worked out once before the replay:
// a SEND's transfers, one per lane member; a collective's flows, all of them
// when one lane drives the group (TP), or those that leave the lane's own
// GPUs (and a parameter server's flows to them) when the group spans lanes;
// or, for a TP group whose links no other traffic uses, a closed-form time,
// as for an expert group's all-to-all whose links are its own where max-min
// sharing makes the closed form exact (closed_form_is_exact).
// Every flow of the step belongs to exactly one lane task, so the replay can
// count link bytes and find equivalent replicas from these lists alone.
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "sim/engine/collective_plan_cache.hpp"
#include "sim/engine/replay_lanes.hpp"
#include "sim/engine/simulated_tasks.hpp"
#include "sim/network/fabric.hpp"

namespace simtrain {

// A flow as LaneFlows keeps it: its rate bound is its comm's.
struct LaneFlow {
  int src = 0, dst = 0;
  double bytes = 0;
};

// A lane task's network work.
struct LaneComm {
  uint32_t first_flow = 0;  // into LaneFlows::all()
  uint32_t flow_count = 0;
  const ClosedForm* closed_form = nullptr;  // set where the task is timed in closed form
  double later_steps_latency_seconds = 0;   // a collective's latency beyond its first step
  bool spans_lanes = false;                 // a collective whose lanes meet at a barrier
  double max_bytes_per_second = 0;          // each of its flows' own rate bound (a Gloo connection's); 0: none
  uint32_t position = 0;                    // its task's place in its rank's list
  int32_t group = -1;                       // a collective's group; -1: a SEND
};

class LaneFlows {
public:
  // `altered_links`: degraded or failing links, never timed in closed form;
  // `closed_forms` false: none is (ReplayOptions::flow_level).
  LaneFlows(const Program& program, const Fabric& fabric, const Lanes& lanes, CollectivePlanCache& plans,
            const std::set<int>& altered_links, bool closed_forms);

  // The network work of `task`, a lane representative's SEND or collective;
  // null for any other task.
  const LaneComm* comm(int task) const {
    return lane_tasks_.contains(task) && comm_of_task_[task] >= 0 ? &comms_[comm_of_task_[task]] : nullptr;
  }
  // Its flows, src != dst; empty when timed in closed form.
  std::span<const LaneFlow> flows(const LaneComm& comm) const {
    return {flows_.data() + comm.first_flow, comm.flow_count};
  }
  const std::vector<LaneFlow>& all() const { return flows_; }
  // The tasks comm() answers for: the lane representatives' SENDs and
  // collectives, in id order.
  const std::vector<int>& comm_tasks() const { return comm_tasks_; }
  // The network work of lane representative `rank`'s tasks, in its list's
  // order (none for any other rank): indices into comm_at.
  std::span<const uint32_t> comms_of_rank(int rank) const {
    return {rank_comms_.data() + rank_comms_begin_[rank], rank_comms_begin_[rank + 1] - rank_comms_begin_[rank]};
  }
  const LaneComm& comm_at(uint32_t index) const { return comms_[index]; }
  // The links of all()[flow]'s route, in order.
  std::span<const int> route(uint32_t flow) const { return route_links(route_index(flow)); }
  // Routes are numbered, one per pair of hosts that flows join: all()[flow]'s,
  // how many, and the links of route `r`, in order.
  uint32_t route_index(uint32_t flow) const { return route_of_flow_[flow]; }
  uint32_t route_count() const { return static_cast<uint32_t>(route_begin_.size() - 1); }
  std::span<const int> route_links(uint32_t r) const {
    return {route_links_.data() + route_begin_[r], route_begin_[r + 1] - route_begin_[r]};
  }

  LaneFlows(const LaneFlows&) = delete;  // comm_of_task_ refers to lane_tasks_
  LaneFlows& operator=(const LaneFlows&) = delete;

private:
  std::vector<int> lane_comm_ids() const;  // comm_tasks(), found
  std::vector<char> isolated_groups(const std::set<int>& altered_links, CollectivePlanCache& plans);
  // Calls on_list(flows, group) for each list of flows a collective's lane
  // drives: its plan's, or each member's part of its group's plan (lane_part).
  template <typename OnList>
  void for_each_collective_flow_list(const Task& task, bool spans_lanes, CollectivePlanCache& plans, OnList&& on_list);
  // Calls on_flow(flow, group, or -1 - rank for a transfer) for each flow `task`'s lane drives.
  template <typename OnFlow>
  void for_each_lane_flow(const Task& task, bool spans_lanes, CollectivePlanCache& plans, OnFlow&& on_flow);
  // The flows of `plan` that leave `lane`'s GPUs (or reach them from a
  // parameter server): what the lane drives of a group spanning lanes.
  const std::vector<Flow>& lane_part(const CollectivePlan& plan, int lane);
  // The closed form of `task`'s collective over an isolated group, or null
  // where flows must time it: an all-to-all has one where it is exact, and a
  // group spanning lanes one for an all-to-all only, each lane's carrying its
  // own flows' link bytes.
  const ClosedForm* closed_form(const Task& task, const CollectivePlan& plan, bool spans_lanes,
                                CollectivePlanCache& plans);

  const Program& prog_;
  const Fabric& fabric_;
  const Lanes& lanes_;
  const std::vector<int> comm_tasks_;
  SimulatedTasks lane_tasks_;            // the lane representatives' tasks
  BySimulatedTask<int32_t> comm_of_task_;  // by such a task: index into comms_, or -1
  std::vector<LaneComm> comms_;
  std::vector<uint32_t> rank_comms_;        // comms_ indices, rank after rank, each in list order
  std::vector<uint32_t> rank_comms_begin_;  // by rank, and one past the last
  std::vector<LaneFlow> flows_;  // 16 bytes: tens of millions in an expert-parallel step
  // Routes, one per pair of hosts that flows join (an all-to-all's flows
  // repeat the same pairs at every layer and micro-batch): flow f's is
  // route_links_[route_begin_[r], route_begin_[r + 1]) with r = route_of_flow_[f].
  std::vector<uint32_t> route_of_flow_;
  std::vector<uint32_t> route_begin_;  // by route, and one past the last
  std::vector<int> route_links_;
  std::map<std::pair<const CollectivePlan*, int>, ClosedForm> lane_closed_forms_;  // by plan and lane
  std::map<std::pair<const CollectivePlan*, int>, std::vector<Flow>> lane_parts_;     // by plan and lane
};

}  // namespace simtrain
