#pragma once
// The replay's lanes. The ranks of a tensor-parallel group run in lockstep
// (every layer ends in a TP collective), so one lane stands for all of them:
// its first rank, the representative, carries the tasks that actors run, and
// each other member's task list mirrors the representative's, position by
// position. Every rank outside a TP group is a lane of its own.
#include <cstddef>
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

struct Lane {
  std::vector<int> members;  // ranks, the representative first
  double speed = 1;          // of its slowest GPU: TP ranks wait for each other every layer
};

class Lanes {
public:
  // `gpu_speed_factors` by rank (empty: all 1). Throws std::logic_error when
  // a TP group's ranks have different task lists.
  Lanes(const Program& program, const std::vector<double>& gpu_speed_factors);

  size_t size() const { return lanes_.size(); }
  const Lane& operator[](size_t lane) const { return lanes_[lane]; }
  int lane_of_rank(int rank) const { return lane_of_rank_[rank]; }
  const Lane& lane_of(int rank) const { return lanes_[lane_of_rank_[rank]]; }
  bool is_representative(int rank) const { return lane_of(rank).members[0] == rank; }
  // Whether a group's ranks are in more than one lane (each lane then drives its own flows).
  bool spans_lanes(const Group& group) const {
    return lane_of_rank(group.ranks.front()) != lane_of_rank(group.ranks.back());
  }
  // The representative's task that stands for task `id`.
  int representative_task(int id) const;
  // The task at `rep_task`'s position on each member of its lane, the representative's own first.
  std::vector<Task> member_tasks(const Task& rep_task) const;

private:
  const Program& prog_;
  std::vector<Lane> lanes_;
  std::vector<int> lane_of_rank_;
};

}  // namespace simtrain
