// Data-parallel gradient synchronisation, its collectives on the dp stream: each gradient
// bucket is reduced as soon as the backward that closes it is done
// (Megatron's --overlap-grad-reduce), or all of them after the last
// backward; ZeRO-3 reduces a chunk's gradients after every backward. With
// compression, each reduction is preceded by its compression and, once the
// backward is over, followed by its decompression. The tied embeddings'
// gradients are all-reduced between the first and last stage. With expert
// parallelism a bucket's routed-expert gradients are reduced over the
// expert-data-parallel group, the rest over the data-parallel one.

#include "sim/base/text_format.hpp"
#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

class DpSyncLowering {
public:
  DpSyncLowering(LoweringContext& context, RankTasks& rank)
      : c_(context), rank_(rank), edit_(rank), ratio_(context.scenario.parallel.dp_compression_ratio) {}

  void lower() {
    const std::vector<ActionSpan> spans = action_spans(rank_);
    for (int i = 0; i < static_cast<int>(spans.size()); ++i) reduce_during(i, spans[i]);
    const size_t end = rank_.tasks.size() - 1;
    const Anchor after_backward{label(ready_index(rank_, spans.back().last_compute)), end, -1};
    if (c_.zero_stage < 3 && !c_.scenario.parallel.overlap_grad_reduce)
      for (int chunk = c_.pipeline_stages.chunks_per_rank() - 1; chunk >= 0; --chunk) {
        const int stage = c_.pipeline_stages.of(chunk, c_.coords[rank_.rank].pp);
        for (const std::vector<ModelUnit>& bucket : c_.gradient_buckets(stage))
          reduce_bucket(bucket, stage, after_backward);
      }
    if (c_.groups.embedding[rank_.rank] >= 0) all_reduce_embedding(after_backward);
    for (const Decompression& d : pending_decompressions_) {
      LoweredTask decompress = codec(TaskKind::DECOMPRESS, d.stage, d.bytes, {d.reduced, end, -1});
      decompress.gradients_ready = true;
      edit_.insert_after(end, std::move(decompress));
    }
    edit_.apply();
  }

private:
  // Where a reduction's tasks go: after the task at `place`, the first waiting for
  // label `after`, as part of pipeline action `action` (-1: the step's end).
  struct Anchor {
    int after;
    size_t place;
    int action;
  };

  int label(size_t index) const { return rank_.tasks[index].label; }

  // The reductions a pipeline action issues: of each bucket its backward
  // closes, or (ZeRO-3) of the chunk's gradients after every backward.
  void reduce_during(int i, const ActionSpan& span) {
    for (size_t t = span.first_compute; t <= span.last_compute; ++t) {
      const LoweredTask& backward = rank_.tasks[t];
      if (!backward.closes_bucket) continue;
      const size_t ready = ready_index(rank_, t);
      reduce_bucket(backward.units, backward.task.stage, {label(ready), ready, i});
    }
    if (c_.zero_stage == 3 && c_.layout.data > 1 && rank_.actions[i].kind == TaskKind::B) {
      const int stage = rank_.tasks[span.last_compute].task.stage;
      const Anchor anchor{label(ready_index(rank_, span.last_compute)), span.last_task, i};
      for (const auto& [group, shard_parameters] : parameters_by_shard_group(c_, rank_.rank, c_.units(stage)))
        reduce(stage, shard_parameters * c_.workload.grad_bytes_per_parameter, anchor, std::nullopt, group);
    }
  }

  void reduce_bucket(std::span<const ModelUnit> bucket, int stage, const Anchor& anchor) {
    if (c_.layout.data < 2) return;
    for (const auto& [group, shard_parameters] : parameters_by_shard_group(c_, rank_.rank, bucket))
      reduce(stage, shard_parameters * c_.workload.grad_bytes_per_parameter, anchor, shard_parameters, group);
  }

  // `group`: the one a plain reduction runs over (parameters_by_shard_group's);
  // hierarchical and parameter-server reductions take the rank's own groups.
  void reduce(int stage, double bytes, const Anchor& anchor, std::optional<double> bucket_parameters, int group);

  void all_reduce_embedding(const Anchor& anchor) {
    const double bytes = c_.workload.tied_embedding_copy_parameters * c_.workload.grad_bytes_per_parameter;
    const int group = c_.groups.embedding[rank_.rank];
    LoweredTask all_reduce =
        rank_.make(group_collective(c_, rank_.rank, Stream::dp, TaskKind::ALLREDUCE, group, bytes), {anchor.after});
    all_reduce.gradients_ready = true;
    edit_.insert_after(anchor.place, std::move(all_reduce));
  }

  // Gradient compression or decompression on the compute stream, at the
  // scenario's cost per byte of uncompressed gradient.
  LoweredTask codec(TaskKind kind, int stage, double bytes, const Anchor& anchor) {
    Task t;
    t.kind = kind;
    t.stage = stage;
    // The task is named as its Work (task_name): the only place the Program keeps the gradient size and ratio.
    const std::string name = to_lower(to_string(kind)) + " " + format_bytes(bytes) + " /" + format("%g", ratio_);
    const double seconds = bytes * c_.scenario.parallel.dp_compression_seconds_per_byte;
    LoweredTask lowered = rank_.make(t, {anchor.after}, anchor.action);
    lowered.work = c_.shared_work(name, [&] { return Work{name, {}, seconds}; });
    return lowered;
  }

  LoweringContext& c_;
  RankTasks& rank_;
  ListEdit edit_;
  const double ratio_;
  struct Decompression {
    int stage;
    double bytes;
    int reduced;  // label of the reduction it follows
  };
  std::vector<Decompression> pending_decompressions_;
};

// Reduces `bytes` of gradients across data-parallel ranks as dp_sync says,
// compressed first when asked; the optimizer waits for the last task.
void DpSyncLowering::reduce(int stage, double bytes, const Anchor& anchor, std::optional<double> bucket_parameters,
                            int group) {
  std::vector<LoweredTask> tasks;
  if (ratio_ > 1) tasks.push_back(codec(TaskKind::COMPRESS, stage, bytes, anchor));
  auto collective = [&](TaskKind kind, int group, double collective_bytes) {
    const int previous = tasks.empty() ? anchor.after : tasks.back().label;
    Task task = group_collective(c_, rank_.rank, Stream::dp, kind, group, collective_bytes, stage);
    tasks.push_back(rank_.make(std::move(task), {previous}, anchor.action));
  };
  const double wire_bytes = bytes / ratio_;
  const int rank = rank_.rank;
  if (c_.scenario.parallel.dp_sync == DpSync::hierarchical) {
    const int node = c_.groups.dp_node[rank], across = c_.groups.dp_across[rank];
    const double shards = node >= 0 ? static_cast<double>(c_.groups[node].ranks.size()) : 1;
    if (node >= 0) collective(TaskKind::REDUCESCATTER, node, wire_bytes);
    if (across >= 0) collective(TaskKind::ALLREDUCE, across, wire_bytes / shards);
    if (node >= 0) collective(TaskKind::ALLGATHER, node, wire_bytes);
  } else if (c_.servers > 0) {
    collective(TaskKind::REDUCESCATTER, c_.groups.dp[rank], wire_bytes);
    collective(TaskKind::ALLGATHER, c_.groups.dp[rank], wire_bytes);
  } else {
    collective(c_.zero_stage == 0 ? TaskKind::ALLREDUCE : TaskKind::REDUCESCATTER, group, wire_bytes);
  }
  LoweredTask& reduced = tasks.back();
  reduced.gradients_ready = true;
  reduced.bucket_parameters = bucket_parameters;
  if (ratio_ > 1) pending_decompressions_.push_back({stage, bytes, reduced.label});
  for (LoweredTask& task : tasks) edit_.insert_after(anchor.place, std::move(task));
}

}  // namespace

void lower_dp_sync(LoweringContext& context, RankTasks& rank) { DpSyncLowering(context, rank).lower(); }

}  // namespace simtrain
