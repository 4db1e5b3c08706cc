// The optimizer step, once every gradient reduction is done, over the
// parameters of the rank's chunks (its shard of them under ZeRO); the
// distributed optimizer (ZeRO-1/2) then all-gathers the updated bf16
// weights, bucket by bucket (unless overlap_param_gather gathers them during
// the forward). fp8 (fp4) training casts the weights once a step: run with
// the optimizer here (TE does it in the first micro-batch's forward).
#include "sim/model/optimizer_step.hpp"
#include "sim/model/quantization.hpp"
#include "sim/program/lowering.hpp"

namespace simtrain {

void lower_optimizer(LoweringContext& context, RankTasks& rank) {
  Task step;
  step.kind = TaskKind::OPT;
  std::vector<int> reductions;
  for (const LoweredTask& task : rank.tasks)
    if (task.gradients_ready) reductions.push_back(task.label);
  LoweredTask& optimizer = rank.tasks.emplace_back(rank.make(std::move(step), std::move(reductions)));

  double local_parameters = 0, expert_parameters = 0, low_precision_weights = 0;
  for (int chunk = 0; chunk < context.pipeline_stages.chunks_per_rank(); ++chunk)
    for (const ModelUnit& unit : context.units(context.pipeline_stages.of(chunk, context.coords[rank.rank].pp))) {
      local_parameters += unit.work->parameters;
      expert_parameters += unit.work->expert_parameters;
      low_precision_weights += unit.work->low_precision_weights;
    }
  const bool sharded = context.zero_stage >= 1 && context.layout.data > 1;
  // With expert parallelism the routed experts' states are sharded over their expert-data-parallel group.
  const ParallelConfig& parallel = context.scenario.parallel;
  const double experts = parallel.expert > 1 ? expert_parameters : 0;
  const double updated_parameters = sharded ? (local_parameters - experts) / double(context.layout.data) +
                                                  experts / double(parallel.expert_data())
                                            : local_parameters;
  // ZeRO-2 and 3 keep only their shard of the gradients.
  const double gradient_parameters = sharded && context.zero_stage >= 2 ? updated_parameters : local_parameters;
  const std::string key = "optimizer " + std::to_string(updated_parameters) + " " +
                          std::to_string(gradient_parameters) + " " + std::to_string(low_precision_weights);
  optimizer.work = context.shared_work(key, [&] {
    Work work{"optimizer", optimizer_step_ops({.updated_parameters = updated_parameters,
                                               .gradient_parameters = gradient_parameters,
                                               .grad_bytes_per_parameter = context.workload.grad_bytes_per_parameter})};
    if (low_precision_weights > 0) {
      const std::vector<Op> casts =
          weight_cast_ops(linear_quantization(context.scenario.training), low_precision_weights);
      work.ops.insert(work.ops.end(), casts.begin(), casts.end());
    }
    return work;
  });
  if (!sharded || context.zero_stage == 3 || context.overlap_param_gather) return;

  const int optimizer_label = optimizer.label;
  // Each bucket's weights are gathered over the group its gradients were reduce-scattered over.
  std::vector<std::pair<double, int>> buckets;  // parameters and group of each gradient bucket, in the order reduced
  for (const LoweredTask& task : rank.tasks)
    if (task.bucket_parameters) buckets.emplace_back(*task.bucket_parameters, task.task.group);
  for (const auto& [bucket_parameters, group] : buckets) {
    const double bytes = bucket_parameters * context.workload.weight_bytes_per_parameter;
    Task gather = group_collective(context, rank.rank, Stream::dp_gather, TaskKind::ALLGATHER, group, bytes);
    rank.tasks.push_back(rank.make(std::move(gather), {optimizer_label}));
  }
}

}  // namespace simtrain
