#include "sim/chakra/communication_order.hpp"

#include <map>
#include <queue>
#include <stdexcept>
#include <string>

namespace simtrain {

bool holds_communication_slot(TaskKind kind) { return kind == TaskKind::SEND || is_collective(kind); }

namespace {

// The events of the order: each task alone, but a collective's tasks on all
// its group's members (the k-th of the group on each) are one event, named by
// its member on the group's first rank. `next_member` links an event's tasks.
struct Events {
  std::vector<int32_t> event_of;     // task id -> event id (a task id)
  std::vector<int32_t> next_member;  // task id -> the next task of its event, -1 after the last
};

Events collective_events(const Program& program) {
  const size_t tasks = program.tasks.size();
  Events events{std::vector<int32_t>(tasks), std::vector<int32_t>(tasks, -1)};
  for (size_t id = 0; id < tasks; ++id) events.event_of[id] = static_cast<int32_t>(id);
  std::vector<std::map<int, std::vector<int32_t>>> of_group(program.groups.size());  // group -> rank -> its tasks
  for (int rank = 0; rank < program.world_size; ++rank)
    for (const int id : program.rank_tasks(rank)) {
      const Task& task = program.tasks[id];
      if (is_collective(task.kind)) of_group.at(task.group)[rank].push_back(id);
    }
  for (size_t group = 0; group < of_group.size(); ++group) {
    const auto& by_rank = of_group[group];
    if (by_rank.empty()) continue;
    const std::vector<int32_t>& first = by_rank.begin()->second;
    for (const auto& [rank, ids] : by_rank) {
      if (ids.size() != first.size())
        throw std::logic_error("group " + program.groups[group].name + ": rank " + std::to_string(rank) + " issues " +
                               std::to_string(ids.size()) + " collectives, rank " + std::to_string(by_rank.begin()->first) +
                               " " + std::to_string(first.size()));
      for (size_t k = 0; k < ids.size(); ++k) {
        events.event_of[ids[k]] = first[k];
        if (rank != by_rank.begin()->first) {  // linked after the event's first task
          events.next_member[ids[k]] = events.next_member[first[k]];
          events.next_member[first[k]] = ids[k];
        }
      }
    }
  }
  return events;
}

// Each task's predecessor on its stream's queue (-1: none).
std::vector<int32_t> queue_predecessors(const Program& program) {
  std::vector<int32_t> before(program.tasks.size(), -1);
  for (int rank = 0; rank < program.world_size; ++rank)
    for (const TaskQueue& queue : task_queues(program, rank))
      for (size_t i = 1; i < queue.tasks.size(); ++i) before[queue.tasks[i]] = queue.tasks[i - 1];
  return before;
}

}  // namespace

std::vector<int32_t> communication_predecessors(const Program& program, const std::vector<double>& work_seconds) {
  const size_t tasks = program.tasks.size();
  const Events events = collective_events(program);
  const std::vector<int32_t> queue_before = queue_predecessors(program);
  auto for_each_predecessor = [&](int32_t id, auto&& visit) {
    for (const int32_t dep : program.deps(id)) visit(dep);
    if (queue_before[id] >= 0) visit(queue_before[id]);
  };

  // The edges between events, as successor lists (duplicates kept: counted alike on both sides).
  std::vector<int32_t> waiting_for(tasks, 0);
  std::vector<int64_t> first_successor(tasks + 1, 0);
  for (size_t id = 0; id < tasks; ++id)
    for_each_predecessor(int32_t(id), [&](int32_t dep) {
      if (events.event_of[dep] != events.event_of[id]) ++first_successor[events.event_of[dep] + 1];
    });
  for (size_t id = 0; id < tasks; ++id) first_successor[id + 1] += first_successor[id];
  std::vector<int32_t> successors(static_cast<size_t>(first_successor[tasks]));
  std::vector<int64_t> filled(first_successor.begin(), first_successor.end() - 1);
  for (size_t id = 0; id < tasks; ++id)
    for_each_predecessor(int32_t(id), [&](int32_t dep) {
      const int32_t from = events.event_of[dep], to = events.event_of[id];
      if (from == to) return;
      successors[filled[from]++] = to;
      ++waiting_for[to];
    });

  // Kahn's algorithm, the event that can start earliest first (ties: lowest id).
  auto seconds_of = [&](int32_t event) {
    const Task& task = program.tasks[event];
    return is_compute(task.kind) ? work_seconds.at(task.work) : 0.0;
  };
  std::vector<double> ready_seconds(tasks, 0.0);
  using Entry = std::pair<double, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  size_t event_count = 0, ordered = 0;
  for (size_t id = 0; id < tasks; ++id) {
    if (events.event_of[id] != int32_t(id)) continue;
    ++event_count;
    if (waiting_for[id] == 0) ready.push({0.0, int32_t(id)});
  }
  std::vector<int32_t> last_on_rank(program.world_size, -1);
  std::vector<int32_t> before(tasks, -1);
  while (!ready.empty()) {
    const auto [start, event] = ready.top();
    ready.pop();
    ++ordered;
    for (int32_t id = event; id >= 0; id = events.next_member[id]) {
      const Task& task = program.tasks[id];
      if (!holds_communication_slot(task.kind)) continue;
      before[id] = last_on_rank[task.rank];
      last_on_rank[task.rank] = id;
    }
    const double end = start + seconds_of(event);
    for (int64_t s = first_successor[event]; s < first_successor[event + 1]; ++s) {
      const int32_t next = successors[s];
      ready_seconds[next] = std::max(ready_seconds[next], end);
      if (--waiting_for[next] == 0) ready.push({ready_seconds[next], next});
    }
  }
  if (ordered != event_count)
    throw std::logic_error("the Program's dependencies and stream order form a cycle: " +
                           std::to_string(event_count - ordered) + " of " + std::to_string(event_count) +
                           " events cannot be ordered");
  return before;
}

}  // namespace simtrain
