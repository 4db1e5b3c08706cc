// The optimizer step, once every gradient reduction is done, over the
// parameters of the rank's chunks (its shard of them under ZeRO); the
// distributed optimizer (ZeRO-1/2) then all-gathers the updated bf16
// weights, bucket by bucket (unless overlap_param_gather gathers them during
// the forward). fp8 training casts the weights to fp8 once a step: run with
// the optimizer here (TE does it in the first micro-batch's forward).
#include "sim/program/lowering.hpp"

namespace simtrain {

void lower_optimizer(LoweringContext& context, RankTasks& rank) {
  Task step;
  step.kind = TaskKind::OPT;
  std::vector<int> reductions;
  for (const LoweredTask& task : rank.tasks)
    if (task.gradients_ready) reductions.push_back(task.label);
  LoweredTask& optimizer = rank.tasks.emplace_back(rank.make(std::move(step), std::move(reductions)));

  double local_parameters = 0, fp8_weights = 0;
  for (int chunk = 0; chunk < context.virtual_stages; ++chunk)
    for (const ModelUnit& unit : context.units(chunk * context.layout.pipeline + context.coords[rank.rank].pp)) {
      local_parameters += unit.work->parameters;
      fp8_weights += unit.work->fp8_weights;
    }
  const bool sharded = context.zero_stage >= 1 && context.layout.data > 1;
  const double updated_parameters = local_parameters / (sharded ? context.layout.data : 1);
  const std::string key = "optimizer " + std::to_string(updated_parameters) + " " + std::to_string(fp8_weights);
  optimizer.work = context.shared_work(key, [&] {
    Work work{"optimizer", {optimizer_op(updated_parameters)}};
    if (fp8_weights > 0) work.ops.push_back(fp8_weight_cast_op(fp8_weights));
    return work;
  });
  if (!sharded || context.zero_stage == 3 || context.overlap_param_gather) return;

  const int optimizer_label = optimizer.label;
  const int group = context.groups.dp[rank.rank];
  std::vector<double> buckets;  // parameters of each gradient bucket, in the order they were reduced
  for (const LoweredTask& task : rank.tasks)
    if (task.bucket_parameters) buckets.push_back(*task.bucket_parameters);
  for (double bucket_parameters : buckets) {
    const double bytes = bucket_parameters * context.workload.weight_bytes_per_parameter;
    Task gather = group_collective(context, rank.rank, Stream::dp_gather, TaskKind::ALLGATHER, group, bytes);
    rank.tasks.push_back(rank.make(std::move(gather), {optimizer_label}));
  }
}

}  // namespace simtrain
