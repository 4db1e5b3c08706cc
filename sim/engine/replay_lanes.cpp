#include "sim/engine/replay_lanes.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/program/task_list_difference.hpp"

namespace simtrain {

// Lanes are TP groups; every rank outside one is its own lane.
Lanes::Lanes(const Program& program, const std::vector<double>& gpu_speed_factors) : prog_(program) {
  lane_of_rank_.assign(prog_.world_size, -1);
  for (const Group& g : prog_.groups)
    if (g.dim == CommDim::tp) {
      for (int r : g.ranks) lane_of_rank_[r] = static_cast<int>(lanes_.size());
      lanes_.push_back({g.ranks});
    }
  for (int r = 0; r < prog_.world_size; ++r)
    if (lane_of_rank_[r] < 0) {
      lane_of_rank_[r] = static_cast<int>(lanes_.size());
      lanes_.push_back({{r}});
    }
  for (Lane& lane : lanes_)
    for (int member : lane.members)
      if (!gpu_speed_factors.empty()) lane.speed = std::min(lane.speed, gpu_speed_factors[member]);
  // Each member's task list mirrors the representative's, position by position.
  for (const Lane& lane : lanes_)
    for (int member : lane.members) {
      const std::string difference = task_list_difference(prog_, lane.members[0], member);
      if (!difference.empty()) throw std::logic_error("TP ranks with different task lists: " + difference);
    }
}

int Lanes::representative_task(int id) const {
  return prog_.rank_tasks(lane_of(prog_.tasks.rank_of(id)).members[0])[prog_.tasks.position_in_rank(id)];
}

std::vector<Task> Lanes::member_tasks(const Task& rep_task) const {
  std::vector<Task> tasks;
  const int position = prog_.tasks.position_in_rank(rep_task.id);
  const std::vector<int>& members = lane_of(rep_task.rank).members;
  tasks.reserve(members.size());
  for (int member : members) tasks.push_back(prog_.tasks[prog_.rank_tasks(member)[position]]);
  return tasks;
}

}  // namespace simtrain
