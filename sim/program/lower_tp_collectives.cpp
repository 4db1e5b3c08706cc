// Tensor-parallel collectives: right after the compute task whose layers
// issue them, on the compute stream (they block those layers), one task per
// kind and size standing for the back-to-back collectives of the pass.
#include <map>

#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

// The TP collectives of `compute`'s units and passes, counted per kind and size.
std::map<std::pair<TaskKind, double>, int> tp_counts(const LoweredTask& compute) {
  std::map<std::pair<TaskKind, double>, int> counts;
  for (const ModelUnit& unit : compute.units)
    for (PassOf pass : compute.passes)
      for (const TpCollectives& c : (unit.work->*pass).tp) counts[{c.kind, c.bytes}] += c.count;
  return counts;
}

}  // namespace

void lower_tp_collectives(const LoweringContext& context, RankTasks& rank) {
  ListEdit edit(rank);
  for (size_t i = 0; i < rank.tasks.size(); ++i) {
    const LoweredTask& compute = rank.tasks[i];
    if (!is_model_pass(compute.task.kind)) continue;
    int last = compute.label;  // each collective waits for the one before
    for (const auto& [key, count] : tp_counts(compute)) {
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
