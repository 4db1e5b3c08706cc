// Tensor-parallel collectives (and expert parallelism's token exchange over
// the EP group), one task per group, kind and size standing for the
// collectives of the pass. Blocking ones sit right after the compute task
// whose layers issue them, on the compute stream (they block those layers);
// overlapped ones (sequence parallelism's re-gather of a linear's input for
// its weight gradient, a column-parallel linear's input-gradient reduction
// beside its weight-gradient GEMM) on a stream of their own, starting with
// the compute.
#include <algorithm>
#include <map>
#include <tuple>

#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

CommDim comm_dim(LayerGroup group) {
  switch (group) {
    case LayerGroup::tensor: return CommDim::tp;
    case LayerGroup::expert:
    case LayerGroup::expert_node:
    case LayerGroup::expert_across: return CommDim::ep;
    case LayerGroup::context_a2a:
    case LayerGroup::context_ring: return CommDim::cp;
  }
  return CommDim::none;
}

const std::vector<int>& group_of(const CommGroups& groups, LayerGroup group) {
  switch (group) {
    case LayerGroup::tensor: return groups.tp;
    case LayerGroup::expert: return groups.ep;
    case LayerGroup::expert_node: return groups.ep_node;
    case LayerGroup::expert_across: return groups.ep_across;
    case LayerGroup::context_a2a: return groups.cp_a2a;
    case LayerGroup::context_ring: return groups.cp_ring;
  }
  return groups.tp;
}

// (beside the weight gradients, group, kind, size) -> collectives: a task's
// reductions beside its weight-gradient GEMMs come after its re-gathers,
// which the input-gradient GEMMs before them wait for.
using TpCounts = std::map<std::tuple<bool, LayerGroup, TaskKind, double>, int>;

// The blocking or the overlapped TP collectives of `compute`'s units and
// passes, counted per kind and size; `ep_beside_compute`: its EP
// all-to-alls count as overlapped.
TpCounts tp_counts(const LoweredTask& compute, bool overlapped, bool ep_beside_compute) {
  const bool computes_weight_gradients = std::find(compute.passes.begin(), compute.passes.end(),
                                                   &UnitWork::backward_weight) != compute.passes.end();
  TpCounts counts;
  for (const ModelUnit& unit : compute.units)
    for (PassOf pass : compute.passes)
      for (const TpCollectives& c : (unit.work->*pass).tp) {
        const bool beside_weight_gradients = c.beside_weight_gradient && computes_weight_gradients;
        const bool beside_compute =
            c.beside_compute(computes_weight_gradients) || (ep_beside_compute && is_expert_group(c.group));
        if (beside_compute == overlapped) counts[{beside_weight_gradients, c.group, c.kind, c.bytes}] += c.count;
      }
  return counts;
}

// overlap_moe_expert_parallel_comm: Megatron merges a forward and a backward
// of different micro-batches in the 1F1B phase, each one's all-to-alls
// running beside the other's compute. A rank's forwards after its first
// backward and its backwards before its last forward have such a partner;
// warm-up forwards and cool-down backwards do not. Each task's all-to-alls
// run beside its own compute here, so that a merged pair takes
// max(F, A2A_F) + max(B, A2A_B), never less than Megatron's
// max(F + B, A2A_F + A2A_B). DualPipe's overlapped forward-backward pairs
// (PipelineAction::overlapped) are such pairs, whatever the flag says.
std::vector<char> ep_beside_compute(const LoweringContext& context, const RankTasks& rank) {
  std::vector<char> beside(rank.tasks.size(), 0);
  for (size_t i = 0; i < rank.tasks.size(); ++i)
    beside[i] = rank.tasks[i].action >= 0 && rank.actions[rank.tasks[i].action].overlapped;
  if (!context.scenario.parallel.overlap_ep_comm) return beside;
  bool backward_before = false;
  for (size_t i = 0; i < rank.tasks.size(); ++i) {
    const TaskKind kind = rank.tasks[i].task.kind;
    beside[i] = kind == TaskKind::F && backward_before;
    backward_before = backward_before || kind == TaskKind::B;
  }
  bool forward_after = false;
  for (size_t i = rank.tasks.size(); i-- > 0;) {
    const TaskKind kind = rank.tasks[i].task.kind;
    if (kind == TaskKind::B) beside[i] = forward_after;
    forward_after = forward_after || kind == TaskKind::F;
  }
  return beside;
}

// Adds the TP collectives of each compute task on `stream`, right after it,
// each waiting for `deps_of(compute)` and the collective before it.
template <class DepsOf>
void add_tp_tasks(const LoweringContext& context, RankTasks& rank, bool overlapped, DepsOf deps_of) {
  ListEdit edit(rank);
  const std::vector<char> ep_beside = ep_beside_compute(context, rank);
  // Tasks that share a Work run the same units and passes: counted once per Work (and EP placement).
  std::map<std::pair<const Work*, bool>, TpCounts> counts_of_work;
  for (size_t i = 0; i < rank.tasks.size(); ++i) {
    const LoweredTask& compute = rank.tasks[i];
    if (!is_model_pass(compute.task.kind)) continue;
    auto [counts, first] = counts_of_work.try_emplace({compute.work, ep_beside[i] != 0});
    if (first) counts->second = tp_counts(compute, overlapped, ep_beside[i] != 0);
    std::vector<int> deps;
    for (const auto& [key, count] : counts->second) {
      if (count == 0) continue;
      if (deps.empty()) deps = deps_of(i);
      const auto [beside_weight_gradients, group, kind, bytes] = key;
      Task c;
      c.kind = kind;
      c.stream = overlapped ? Stream::tp_overlap : Stream::compute;
      c.stage = compute.task.stage;
      c.microbatch = compute.task.microbatch;
      c.dim = comm_dim(group);
      c.group = group_of(context.groups, group)[rank.rank];
      c.count = count;
      c.bytes = bytes;
      LoweredTask collective = rank.make(std::move(c), deps, compute.action);
      deps = {collective.label};
      edit.insert_after(i, std::move(collective));
    }
  }
  edit.apply();
}

}  // namespace

void lower_tp_collectives(const LoweringContext& context, RankTasks& rank) {
  add_tp_tasks(context, rank, false, [&](size_t compute) { return std::vector<int>{rank.tasks[compute].label}; });
}

// An overlapped collective starts with its compute task: once what the
// compute waits for and the compute stream's task before it are done (so
// after the transfer and gather passes have added the compute's
// dependencies). The first blocking collective after the compute, which
// follows its weight-gradient GEMMs, waits for it; add_tp_boundary
// (sim/model/layers/op_builder.cpp) issues sequence parallelism's overlapped
// collectives only beside blocking ones. Ring attention's K/V exchange may
// have none after it (no TP): then what follows the compute (its SENDs)
// up to the next compute-stream task but a transfer waits for it; a RECV
// waits for its SEND alone.
void lower_overlapped_tp_collectives(const LoweringContext& context, RankTasks& rank) {
  std::vector<int> before_on_compute(rank.tasks.size(), -1);  // label of the compute stream's task before each
  for (size_t i = 1; i < rank.tasks.size(); ++i)
    before_on_compute[i] = rank.tasks[i - 1].task.stream == Stream::compute ? rank.tasks[i - 1].label
                                                                            : before_on_compute[i - 1];
  add_tp_tasks(context, rank, true, [&](size_t compute) {
    std::vector<int> deps = rank.tasks[compute].deps;
    if (before_on_compute[compute] >= 0) deps.push_back(before_on_compute[compute]);
    return deps;
  });
  // A compute's overlapped collectives now sit between it and its first
  // blocking one, which waits for the last of them (they run in turn).
  for (size_t i = 1; i < rank.tasks.size(); ++i) {
    if (rank.tasks[i].task.stream == Stream::tp_overlap || rank.tasks[i - 1].task.stream != Stream::tp_overlap) continue;
    for (size_t next = i; next < rank.tasks.size(); ++next) {
      LoweredTask& waiting = rank.tasks[next];
      if (waiting.task.kind == TaskKind::RECV) continue;
      waiting.deps.push_back(rank.tasks[i - 1].label);
      if (waiting.task.stream == Stream::compute && waiting.task.kind != TaskKind::SEND) break;
    }
  }
}

}  // namespace simtrain
