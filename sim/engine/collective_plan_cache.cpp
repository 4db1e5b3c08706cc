#include "sim/engine/collective_plan_cache.hpp"

namespace simtrain {

const CollectivePlan& CollectivePlanCache::plan(const Task& task, const Group& group) {
  auto key = std::make_tuple(group.id, static_cast<int>(task.kind), task.bytes, task.count);
  auto it = plans_.find(key);
  if (it == plans_.end())
    it = plans_
             .emplace(key, group.servers > 0
                               ? parameter_server_plan(task.kind, group.ranks, group.servers, task.bytes, task.count, fabric_)
                               : plan_collective(task.kind, group.ranks, task.bytes, task.count,
                                                 algorithm_for(task.kind, group, task.bytes), fabric_))
             .first;
  return it->second;
}

const ClosedForm& CollectivePlanCache::closed_form(const CollectivePlan& plan) {
  auto [it, inserted] = closed_forms_.try_emplace(&plan);
  if (inserted) it->second = {closed_form_seconds(plan, fabric_), link_loads(plan, fabric_)};
  return it->second;
}

Algorithm CollectivePlanCache::algorithm_for(TaskKind kind, const Group& group, double bytes) {
  if (kind != TaskKind::ALLREDUCE) return Algorithm::ring;
  if (const auto wanted = group.allreduce_algorithm ? group.allreduce_algorithm : allreduce_algorithm_) return *wanted;
  auto key = std::make_pair(group.id, bytes);
  auto it = chosen_algorithm_.find(key);
  if (it == chosen_algorithm_.end())
    it = chosen_algorithm_.emplace(key, choose_allreduce_algorithm(group.ranks, bytes, fabric_)).first;
  return it->second;
}

}  // namespace simtrain
