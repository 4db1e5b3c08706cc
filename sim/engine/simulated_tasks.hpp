#pragma once
// The tasks of chosen ranks, numbered densely. The tasks a replay's actors
// run are those of the lane representatives of the representative replicas
// (replay_lanes.hpp, replica_classes.hpp): the replay's state by task is
// sized to them, not to every rank's tasks (a 3,072-GPU step runs 326,340 of
// its 15.7 million); LaneFlows' by the lane representatives' tasks.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

class SimulatedTasks {
public:
  // `simulated(rank)`: whether actors run `rank`'s tasks.
  template <typename Simulated>
  SimulatedTasks(const Program& program, Simulated&& simulated)
      : tasks_(&program.tasks), first_of_rank_(program.rank_lists(), -1) {
    for (int rank = 0; rank < program.world_size; ++rank)
      if (simulated(rank)) {
        first_of_rank_[rank] = static_cast<int64_t>(count_);
        count_ += program.rank_tasks(rank).size();
      }
  }

  size_t size() const { return count_; }
  bool contains(int id) const { return first_of_rank_[tasks_->rank_of(id)] >= 0; }
  // Task `id`'s number (it must be simulated): simulated rank after rank, each list in order.
  size_t operator()(int id) const {
    return static_cast<size_t>(first_of_rank_[tasks_->rank_of(id)] + tasks_->position_in_rank(id));
  }

private:
  const TaskTable* tasks_;
  std::vector<int64_t> first_of_rank_;  // -1 where not simulated
  size_t count_ = 0;
};

// A value for each simulated task, read and written by task id.
template <typename T>
class BySimulatedTask {
public:
  BySimulatedTask() = default;
  BySimulatedTask(const SimulatedTasks& tasks, T value) : tasks_(&tasks), values_(tasks.size(), value) {}

  T& operator[](int id) { return values_[(*tasks_)(id)]; }
  const T& operator[](int id) const { return values_[(*tasks_)(id)]; }
  // In the tasks' numbering.
  const std::vector<T>& values() const { return values_; }

private:
  const SimulatedTasks* tasks_ = nullptr;
  std::vector<T> values_;
};

}  // namespace simtrain
