#include "sim/program/rank_translation.hpp"

#include <algorithm>
#include <stdexcept>

namespace simtrain {

namespace {

bool alike(const Group& a, const Group& b) {
  return a.dim == b.dim && a.ranks.size() == b.ranks.size() && a.servers == b.servers &&
         a.allreduce_algorithm == b.allreduce_algorithm;
}

}  // namespace

std::optional<RankTranslation> RankTranslation::between(const LoweringContext& context, int from, int to) {
  if (context.coords[from].pp != context.coords[to].pp) return std::nullopt;
  RankTranslation translation(context, to);
  for (auto kind : kGroupKinds) {
    const int from_group = (context.groups.*kind)[from], to_group = (context.groups.*kind)[to];
    if ((from_group < 0) != (to_group < 0)) return std::nullopt;
    if (from_group < 0) continue;
    if (!alike(context.groups[from_group], context.groups[to_group])) return std::nullopt;
    translation.groups_.emplace_back(from_group, to_group);
  }
  return translation;
}

int RankTranslation::translated_rank(int rank) const {
  const RankCoord& to = context_.coords[to_];
  return context_.layout.rank(to.tp, to.dp, context_.coords[rank].pp);
}

Task RankTranslation::translated(Task task) const {
  task.rank = to_;
  if (task.peer >= 0) task.peer = translated_rank(task.peer);
  if (task.group >= 0) {
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const auto& g) { return g.first == task.group; });
    if (it == groups_.end()) throw std::logic_error("a lowered task names a group its rank is not in");
    task.group = it->second;
  }
  return task;
}

uint64_t RankTranslation::translated_transfer(uint64_t key) const {
  return context_.with_receiver(key, translated_rank(context_.receiver(key)));
}

}  // namespace simtrain
