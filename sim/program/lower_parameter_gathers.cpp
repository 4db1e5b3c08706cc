// Weight all-gathers before the passes that need them, on a stream of their own.
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
  const double bytes_per_parameter = context.workload.weight_bytes_per_parameter;
  // With expert parallelism a bucket's routed experts are gathered over the
  // expert-data-parallel group their gradients were reduce-scattered over
  // (none where that group is one rank), the rest over the data-parallel one.
  const int expert_group = context.scenario.parallel.expert > 1 ? context.groups.expert_dp[rank.rank] : -1;
  for (LoweredTask& forward : rank.tasks) {
    if (!forward.opens_bucket) continue;
    const double experts = context.scenario.parallel.expert > 1 ? expert_parameters(forward.units) : 0;
    const auto gather = [&](int group, double gathered_parameters) {
      LoweredTask task = rank.make(group_collective(context, rank.rank, Stream::dp_gather, TaskKind::ALLGATHER, group,
                                                    gathered_parameters * bytes_per_parameter, forward.task.stage),
                                   {});
      forward.deps.insert(forward.deps.begin(), task.label);
      edit.insert_before(0, std::move(task));
    };
    gather(context.groups.dp[rank.rank], parameters(forward.units) - experts);
    if (experts > 0 && expert_group >= 0) gather(expert_group, experts);
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
    const double bytes = parameters(context.units(stage)) * context.workload.weight_bytes_per_parameter;
    LoweredTask gather = rank.make(group_collective(context, rank.rank, Stream::dp_gather, TaskKind::ALLGATHER,
                                                    context.groups.dp[rank.rank], bytes, stage),
                                   std::move(after), i);
    first_pass.deps.insert(first_pass.deps.begin(), gather.label);
    edit.insert_before(spans[i].first_task, std::move(gather));
  }
  edit.apply();
}

}  // namespace simtrain
