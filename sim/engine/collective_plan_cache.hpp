#pragma once
// The replay's collective plans, each made once per group, kind and size,
// and their closed-form times: the many identical collectives of a step
// (one per layer or bucket) share them.
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/network/collective_plan.hpp"
#include "sim/program/program.hpp"

namespace simtrain {

// A plan timed without SimGrid: its flows share links only with each other.
struct ClosedForm {
  double seconds = 0;
  std::vector<std::pair<int, double>> link_bytes;  // bytes by fabric link index
};

class CollectivePlanCache {
public:
  // `allreduce_algorithm` where the group fixes none; empty: NCCL's choice per size.
  CollectivePlanCache(const Fabric& fabric, std::optional<Algorithm> allreduce_algorithm)
      : fabric_(fabric), allreduce_algorithm_(allreduce_algorithm) {}

  // The flows of `task`'s collective over `group` (a member's group for a
  // representative's task); the reference stays valid.
  const CollectivePlan& plan(const Task& task, const Group& group);
  const ClosedForm& closed_form(const CollectivePlan& plan);

private:
  Algorithm algorithm_for(TaskKind kind, const Group& group, double bytes);

  const Fabric& fabric_;
  const std::optional<Algorithm> allreduce_algorithm_;
  std::map<std::tuple<int, int, double, int>, CollectivePlan> plans_;  // by group, kind, bytes, count
  std::map<std::pair<int, double>, Algorithm> chosen_algorithm_;      // by group, bytes
  std::map<const CollectivePlan*, ClosedForm> closed_forms_;
};

}  // namespace simtrain
