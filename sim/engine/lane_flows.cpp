#include "sim/engine/lane_flows.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace simtrain {

namespace {

bool has_network_work(const Task& task) { return task.kind == TaskKind::SEND || is_collective(task.kind); }

}  // namespace

std::vector<int> LaneFlows::lane_comm_ids() const {
  std::vector<int> ids;
  for (int rank = 0; rank < prog_.world_size; ++rank)
    if (lanes_.is_representative(rank)) {
      // A task's kind is its stored list's, read without translating it.
      const RankTaskIds mine = prog_.rank_tasks(rank), stored = prog_.rank_tasks(prog_.tasks.source_rank(rank));
      for (size_t i = 0; i < mine.size(); ++i)
        if (has_network_work(prog_.tasks[stored[i]])) ids.push_back(mine[i]);
    }
  if (!prog_.tasks.numbered_rank_by_rank()) std::sort(ids.begin(), ids.end());
  return ids;
}

const std::vector<Flow>& LaneFlows::lane_part(const CollectivePlan& plan, int lane) {
  auto [it, added] = lane_parts_.try_emplace({&plan, lane});
  if (added)
    for (const Flow& f : plan.flows) {
      const int gpu = f.src < prog_.world_size ? f.src : f.dst;
      if (lanes_.lane_of_rank(gpu) == lane) it->second.push_back(f);
    }
  return it->second;
}

template <typename OnList>
void LaneFlows::for_each_collective_flow_list(const Task& task, bool spans_lanes, CollectivePlanCache& plans,
                                              OnList&& on_list) {
  if (!spans_lanes) {  // one lane drives its one group's flows
    on_list(plans.plan(task, prog_.groups[task.group]).flows, task.group);
    return;
  }
  const int lane = lanes_.lane_of_rank(task.rank);
  for (const Task& mine : lanes_.member_tasks(task))
    on_list(lane_part(plans.plan(task, prog_.groups[mine.group]), lane), mine.group);
}

template <typename OnFlow>
void LaneFlows::for_each_lane_flow(const Task& task, bool spans_lanes, CollectivePlanCache& plans, OnFlow&& on_flow) {
  if (task.kind == TaskKind::SEND) {
    for (const Task& mine : lanes_.member_tasks(task)) on_flow(Flow{mine.rank, mine.peer, mine.bytes}, -1 - mine.rank);
    return;
  }
  for_each_collective_flow_list(task, spans_lanes, plans, [&](const std::vector<Flow>& flows, int group) {
    for (const Flow& f : flows) on_flow(f, group);
  });
}

LaneFlows::LaneFlows(const Program& program, const Fabric& fabric, const Lanes& lanes, CollectivePlanCache& plans,
                     const std::set<int>& altered_links, bool closed_forms)
    : prog_(program), fabric_(fabric), lanes_(lanes), comm_tasks_(lane_comm_ids()),
      lane_tasks_(program, [&](int rank) { return lanes.is_representative(rank); }), comm_of_task_(lane_tasks_, -1) {
  std::vector<char> isolated = isolated_groups(altered_links, plans);
  if (!closed_forms) isolated.assign(isolated.size(), 0);
  route_begin_.push_back(0);
  std::unordered_map<uint64_t, uint32_t> route_of_pair;  // by src x hosts + dst
  const auto route_index = [&](const Flow& f) {
    const uint64_t pair = uint64_t(f.src) * uint64_t(fabric_.num_hosts()) + uint64_t(f.dst);
    auto [it, added] = route_of_pair.try_emplace(pair, static_cast<uint32_t>(route_begin_.size() - 1));
    if (added) {
      for (int link : fabric_.route(f.src, f.dst)) route_links_.push_back(link);
      route_begin_.push_back(static_cast<uint32_t>(route_links_.size()));
    }
    return it->second;
  };
  // The comms and their flow counts first, then their flows into storage of
  // that size: grown flow by flow, it would hold two copies at its last move
  // (tens of millions of flows for an expert-parallel step).
  uint32_t flow_total = 0;
  // A collective's flow lists (plans' and lane parts, which stay put), comm
  // after comm, so that the second pass need not find them again.
  std::vector<const std::vector<Flow>*> lists;
  std::vector<uint32_t> lists_begin = {0};
  std::vector<Flow> send_flows;  // the SENDs' transfers, comm after comm (each member's task read once)
  for (int id : comm_tasks_) {
    const Task t = prog_.tasks[id];
    comm_of_task_[t.id] = static_cast<int32_t>(comms_.size());
    LaneComm comm;
    comm.first_flow = flow_total;
    comm.position = static_cast<uint32_t>(prog_.tasks.position_in_rank(id));
    if (is_collective(t.kind)) {
      comm.group = t.group;
      const CollectivePlan& plan = plans.plan(t, prog_.groups[t.group]);
      comm.spans_lanes = lanes_.spans_lanes(prog_.groups[t.group]);
      comm.later_steps_latency_seconds = plan.latency_seconds - plan.step_latency_seconds;
      if (isolated[t.group]) comm.closed_form = closed_form(t, plan, comm.spans_lanes, plans);
    }
    const auto count = [&](const Flow& f) {
      if (f.src == f.dst) return;
      if (comm.flow_count++ == 0) comm.max_bytes_per_second = f.max_bytes_per_second;
      if (f.max_bytes_per_second != comm.max_bytes_per_second)
        throw std::logic_error("a lane task's flows have different rate bounds");
    };
    if (is_collective(t.kind) && !comm.closed_form)
      for_each_collective_flow_list(t, comm.spans_lanes, plans, [&](const std::vector<Flow>& flows, int) {
        lists.push_back(&flows);
        for (const Flow& f : flows) count(f);
      });
    else if (t.kind == TaskKind::SEND)
      for_each_lane_flow(t, false, plans, [&](const Flow& f, int) {
        count(f);
        if (f.src != f.dst) send_flows.push_back(f);
      });
    lists_begin.push_back(static_cast<uint32_t>(lists.size()));
    flow_total += comm.flow_count;
    comms_.push_back(comm);
  }
  // Each rank's comms in its list's order: comms_ is in id order, which is
  // list order within a rank where ranks are numbered rank by rank.
  rank_comms_begin_.assign(prog_.world_size + 1, 0);
  for (int id : comm_tasks_) ++rank_comms_begin_[prog_.tasks.rank_of(id) + 1];
  std::partial_sum(rank_comms_begin_.begin(), rank_comms_begin_.end(), rank_comms_begin_.begin());
  rank_comms_.resize(comms_.size());
  std::vector<uint32_t> next(rank_comms_begin_.begin(), rank_comms_begin_.end() - 1);
  for (uint32_t c = 0; c < comms_.size(); ++c) rank_comms_[next[prog_.tasks.rank_of(comm_tasks_[c])]++] = c;
  if (!prog_.tasks.numbered_rank_by_rank())
    for (int rank = 0; rank < prog_.world_size; ++rank)
      std::sort(rank_comms_.begin() + rank_comms_begin_[rank], rank_comms_.begin() + rank_comms_begin_[rank + 1],
                [&](uint32_t a, uint32_t b) { return comms_[a].position < comms_[b].position; });
  flows_.reserve(flow_total);
  route_of_flow_.reserve(flow_total);
  const auto store = [&](const Flow& f) {
    if (f.src == f.dst) return;
    flows_.push_back({f.src, f.dst, f.bytes});
    route_of_flow_.push_back(route_index(f));
  };
  // A list's routes, found once: the same lists recur at every layer and micro-batch.
  std::unordered_map<const std::vector<Flow>*, std::vector<uint32_t>> routes_of_list;
  size_t next_send_flow = 0;
  for (size_t c = 0; c < comm_tasks_.size(); ++c) {
    for (uint32_t l = lists_begin[c]; l < lists_begin[c + 1]; ++l) {
      auto [routes, added] = routes_of_list.try_emplace(lists[l]);
      if (added)
        for (const Flow& f : *lists[l])
          if (f.src != f.dst) routes->second.push_back(route_index(f));
      for (const Flow& f : *lists[l])
        if (f.src != f.dst) flows_.push_back({f.src, f.dst, f.bytes});
      route_of_flow_.insert(route_of_flow_.end(), routes->second.begin(), routes->second.end());
    }
    if (lists_begin[c] == lists_begin[c + 1])  // a SEND: its members' transfers (none for a closed form)
      for (uint32_t f = 0; f < comms_[c].flow_count; ++f) store(send_flows[next_send_flow++]);
  }
}

const ClosedForm* LaneFlows::closed_form(const Task& task, const CollectivePlan& plan, bool spans_lanes,
                                         CollectivePlanCache& plans) {
  if (task.kind == TaskKind::ALLTOALL && !closed_form_is_exact(plan, fabric_)) return nullptr;
  if (!spans_lanes) return &plans.closed_form(plan);
  if (task.kind != TaskKind::ALLTOALL) return nullptr;
  // Every lane of the group sleeps the plan's time; each puts its own flows' bytes on the links.
  const int lane = lanes_.lane_of_rank(task.rank);
  auto [it, added] = lane_closed_forms_.try_emplace({&plan, lane});
  if (added) {
    std::map<int, double> link_bytes;
    for_each_lane_flow(task, true, plans, [&](const Flow& f, int) {
      for (int link : fabric_.route(f.src, f.dst)) link_bytes[link] += f.bytes;
    });
    it->second = {plans.closed_form(plan).seconds, {link_bytes.begin(), link_bytes.end()}};
  }
  return &it->second;
}

// TP groups and expert groups whose flows have their links to themselves (no
// other group or transfer crosses them, none is degraded or fails) may be
// timed in closed form: a TP group's collectives (its ring neighbours'
// routes), an expert group's all-to-alls (every pair's routes).
std::vector<char> LaneFlows::isolated_groups(const std::set<int>& altered_links, CollectivePlanCache& plans) {
  const int no_user = std::numeric_limits<int>::min();
  std::vector<int> first_user(fabric_.links().size(), no_user);
  std::vector<char> shared(fabric_.links().size(), 0);
  // Tasks with the same flows as one seen before add no user to any link.
  std::set<std::tuple<int, int, int, double, int>> seen;  // kind, rank or group, peer or count, bytes, lane
  for (int id : comm_tasks_) {
    const Task t = prog_.tasks[id];
    const bool spans = is_collective(t.kind) && lanes_.spans_lanes(prog_.groups[t.group]);
    const int lane = lanes_.lane_of_rank(t.rank);
    const auto key = t.kind == TaskKind::SEND ? std::make_tuple(-1, t.rank, t.peer, t.bytes, lane)
                                              : std::make_tuple(static_cast<int>(t.kind), t.group, t.count, t.bytes,
                                                                spans ? lane : -1);
    if (!seen.insert(key).second) continue;
    for_each_lane_flow(t, spans, plans, [&](const Flow& f, int user) {
      for (int link : fabric_.route(f.src, f.dst)) {
        if (first_user[link] == no_user) first_user[link] = user;
        if (first_user[link] != user) shared[link] = 1;
      }
    });
  }
  std::vector<char> isolated(prog_.groups.size(), 0);
  const auto alone_on = [&](int src, int dst) {
    for (int link : fabric_.route(src, dst))
      if (shared[link] || altered_links.count(link)) return false;
    return true;
  };
  for (const Group& g : prog_.groups) {
    const size_t n = g.ranks.size();
    bool alone = g.dim == CommDim::tp || g.dim == CommDim::ep;
    for (size_t i = 0; i < n && alone; ++i)
      if (g.dim == CommDim::tp)
        alone = alone_on(g.ranks[i], g.ranks[(i + 1) % n]);
      else
        for (size_t j = 0; j < n && alone; ++j) alone = i == j || alone_on(g.ranks[i], g.ranks[j]);
    isolated[g.id] = alone;
  }
  return isolated;
}

}  // namespace simtrain
