#include "communicator_plan.hpp"

#include <stdexcept>

namespace simtrain {

int CommunicatorPlan::of_task(const Task& task) const {
  if (is_collective(task.kind)) return by_group_and_stream.at({task.group, task.stream});
  if (task.kind == TaskKind::SEND) return by_sender_and_receiver.at({task.rank, task.peer});
  if (task.kind == TaskKind::RECV) return by_sender_and_receiver.at({task.peer, task.rank});
  throw std::logic_error("task " + std::to_string(task.id) + " (" + to_string(task.kind) + ") uses no communicator");
}

CommunicatorPlan plan_communicators(const Program& program) {
  CommunicatorPlan plan;
  std::map<std::pair<int, Stream>, bool> collective_uses;
  std::map<std::pair<int, int>, bool> transfers;
  for (const Task& t : program.tasks) {
    if (is_collective(t.kind)) collective_uses[{t.group, t.stream}] = true;
    if (t.kind == TaskKind::SEND) transfers[{t.rank, t.peer}] = true;
  }
  for (const auto& [key, used] : collective_uses) {
    const Group& group = program.groups.at(key.first);
    plan.by_group_and_stream[key] = static_cast<int>(plan.specs.size());
    plan.specs.push_back({group.name + " on " + to_string(key.second), group.ranks});
  }
  for (const auto& [pair, used] : transfers) {
    plan.by_sender_and_receiver[pair] = static_cast<int>(plan.specs.size());
    plan.specs.push_back({"send " + std::to_string(pair.first) + "->" + std::to_string(pair.second),
                          {pair.first, pair.second}});
  }
  return plan;
}

}  // namespace simtrain
