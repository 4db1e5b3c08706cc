// Tensor-parallel collectives: right after the compute task whose layers
// issue them, on the compute stream (they block those layers), one task per
// kind and size standing for the back-to-back collectives of the pass.
#include <map>
#include <unordered_map>

#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

using TpCounts = std::map<std::pair<TaskKind, double>, int>;  // kind and size -> collectives

// The TP collectives of `compute`'s units and passes, counted per kind and size.
TpCounts tp_counts(const LoweredTask& compute) {
  TpCounts counts;
  for (const ModelUnit& unit : compute.units)
    for (PassOf pass : compute.passes)
      for (const TpCollectives& c : (unit.work->*pass).tp) counts[{c.kind, c.bytes}] += c.count;
  return counts;
}

}  // namespace

void lower_tp_collectives(const LoweringContext& context, RankTasks& rank) {
  ListEdit edit(rank);
  // Tasks that share a Work run the same units and passes: counted once per Work.
  std::unordered_map<const Work*, TpCounts> counts_of_work;
  for (size_t i = 0; i < rank.tasks.size(); ++i) {
    const LoweredTask& compute = rank.tasks[i];
    if (!is_model_pass(compute.task.kind)) continue;
    auto [counts, first] = counts_of_work.try_emplace(compute.work);
    if (first) counts->second = tp_counts(compute);
    int last = compute.label;  // each collective waits for the one before
    for (const auto& [key, count] : counts->second) {
      if (count == 0) continue;
      Task c;
      c.kind = key.first;
      c.stage = compute.task.stage;
      c.microbatch = compute.task.microbatch;
      c.dim = CommDim::tp;
      c.group = context.groups.tp[rank.rank];
      c.count = count;
      c.bytes = key.second;
      LoweredTask collective = rank.make(std::move(c), {last}, compute.action);
      last = collective.label;
      edit.insert_after(i, std::move(collective));
    }
  }
  edit.apply();
}

}  // namespace simtrain
