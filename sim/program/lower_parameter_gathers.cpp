// Weight all-gathers before the passes that need them, on a stream of their own.
// Each over the group its weights are sharded over (parameters_by_shard_group:
// with expert parallelism the routed experts over the expert-data-parallel group).
// FSDP / ZeRO-3: a chunk's parameters are gathered before each forward and
// backward (not before ZB-H1's weight-gradient pass: it needs none),
// prefetched while the action before runs: a gather waits for the action two
// before it. The distributed optimizer with --overlap-param-gather: the
// weights the last step updated are gathered bucket by bucket while the
// forward runs, each bucket's layers' first forward waiting for it (Megatron
// dispatches each bucket's gather as the one before is waited for; in one
// step they are all issued at its start, in the order the forward needs them).
#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

void gather_buckets_at_start(const LoweringContext& context, RankTasks& rank) {
  ListEdit edit(rank);
  for (LoweredTask& forward : rank.tasks) {
    if (!forward.opens_bucket) continue;
    for (const auto& [group, shard_parameters] : parameters_by_shard_group(context, rank.rank, forward.units)) {
      const double bytes = shard_parameters * context.workload.weight_bytes_per_parameter;
      LoweredTask gather = rank.make(
          group_collective(context, rank.rank, Stream::dp_gather, TaskKind::ALLGATHER, group, bytes, forward.task.stage),
          {});
      forward.deps.insert(forward.deps.begin(), gather.label);
      edit.insert_before(0, std::move(gather));
    }
  }
  edit.apply();
}

}  // namespace

void lower_parameter_gathers(const LoweringContext& context, RankTasks& rank) {
  if (context.overlap_param_gather) gather_buckets_at_start(context, rank);
  if (context.zero_stage != 3 || context.layout.data < 2) return;
  ListEdit edit(rank);
  const std::vector<ActionSpan> spans = action_spans(rank);
  for (int i = 0; i < static_cast<int>(spans.size()); ++i) {
    if (rank.actions[i].kind == TaskKind::W) continue;
    std::vector<int> after;
    if (i >= 2) after.push_back(rank.tasks[ready_index(rank, spans[i - 2].last_compute)].label);
    LoweredTask& first_pass = rank.tasks[spans[i].first_compute];
    const int stage = first_pass.task.stage;
    for (const auto& [group, shard_parameters] : parameters_by_shard_group(context, rank.rank, context.units(stage))) {
      const double bytes = shard_parameters * context.workload.weight_bytes_per_parameter;
      LoweredTask gather = rank.make(
          group_collective(context, rank.rank, Stream::dp_gather, TaskKind::ALLGATHER, group, bytes, stage), after, i);
      first_pass.deps.insert(first_pass.deps.begin(), gather.label);
      edit.insert_before(spans[i].first_task, std::move(gather));
    }
  }
  edit.apply();
}

}  // namespace simtrain
