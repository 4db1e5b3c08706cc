#include "sim/program/lowering.hpp"

#include <algorithm>

namespace simtrain {

namespace {

std::vector<RankCoord> rank_coords(const RankLayout& layout) {
  std::vector<RankCoord> coords(layout.world_size());
  for (int pp = 0; pp < layout.pipeline; ++pp)
    for (int dp = 0; dp < layout.data; ++dp)
      for (int tp = 0; tp < layout.tensor; ++tp) coords[layout.rank(tp, dp, pp)] = {tp, dp, pp};
  return coords;
}

std::vector<ModelUnit> expand(const Workload& workload, const StageUnits& held) {
  std::vector<ModelUnit> units;
  if (held.embedding) units.push_back({&workload.embedding, -1});
  for (int layer = held.first_layer; layer < held.first_layer + held.layers; ++layer)
    units.push_back({&workload.layer_at(layer), layer});
  if (held.head) units.push_back({&workload.head, -1});
  return units;
}

// A stage's gradients in buckets, in the order the backward produces them.
std::vector<std::vector<ModelUnit>> in_buckets(const Scenario& scenario, const std::vector<ModelUnit>& forward_order) {
  // Megatron sizes buckets in elements (ddp_bucket_size), whatever the gradients' dtype.
  constexpr double kFp32Bytes = 4;
  std::vector<std::vector<ModelUnit>> buckets(1);
  double bytes = 0;
  for (auto unit = forward_order.rbegin(); unit != forward_order.rend(); ++unit) {
    if (bytes >= scenario.parallel.dp_bucket_bytes) buckets.emplace_back(), bytes = 0;
    buckets.back().push_back(*unit);
    bytes += unit->work->parameters * kFp32Bytes;
  }
  return buckets;
}

std::vector<ModelUnit> reversed(const std::vector<ModelUnit>& units) { return {units.rbegin(), units.rend()}; }

// Per pipeline rank: whether any of its stages holds an MoE layer.
std::vector<bool> pipeline_ranks_holding_experts(const Workload& workload, const PipelineStages& stages) {
  std::vector<bool> holds(stages.p, false);
  if (workload.layer.expert_parameters == 0) return holds;
  for (int stage = 0; stage < stages.count(); ++stage) {
    const StageUnits held = stage_units(workload, stages.layers_of(stage));
    if (workload.dense_layers_among(held.first_layer, held.layers) < held.layers) holds[stages.rank_of(stage)] = true;
  }
  return holds;
}

int parameter_servers(const Scenario& scenario) {
  const bool servers = scenario.parallel.dp_sync == DpSync::parameter_server && scenario.parallel.data > 1;
  return servers ? static_cast<int>(scenario.parallel.parameter_servers) : 0;
}

}  // namespace

double parameters(std::span<const ModelUnit> units) {
  double total = 0;
  for (const ModelUnit& unit : units) total += unit.work->parameters;
  return total;
}

double expert_parameters(std::span<const ModelUnit> units) {
  double total = 0;
  for (const ModelUnit& unit : units) total += unit.work->expert_parameters;
  return total;
}

std::vector<ShardedParameters> parameters_by_shard_group(const LoweringContext& context, int rank,
                                                         std::span<const ModelUnit> units) {
  const bool experts_apart = context.scenario.parallel.expert > 1;
  const double experts = experts_apart ? expert_parameters(units) : 0;
  std::vector<ShardedParameters> parts = {{context.groups.dp[rank], parameters(units) - experts}};
  const int expert_group = experts_apart ? context.groups.expert_dp[rank] : -1;
  if (experts > 0 && expert_group >= 0) parts.push_back({expert_group, experts});
  return parts;
}

LoweredTask RankTasks::make(Task task, std::vector<int> deps, int action) {
  task.rank = rank;
  LoweredTask lowered;
  lowered.task = std::move(task);
  lowered.label = next_label++;
  lowered.deps = std::move(deps);
  lowered.action = action;
  return lowered;
}

void RankTasks::recycle(int new_rank, const std::vector<PipelineAction>& new_actions) {
  rank = new_rank;
  actions = new_actions;
  tasks.clear();
  spare.clear();
  next_label = 0;
}

LoweringContext::LoweringContext(const Scenario& scenario, const Workload& workload)
    : scenario(scenario), workload(workload), layout(scenario.parallel), pipeline_stages(simtrain::pipeline_stages(scenario)),
      virtual_stages(static_cast<int>(scenario.virtual_stages())),
      micro_batches(static_cast<int>(scenario.micro_batches())), stages(pipeline_stages.count()),
      zero_stage(scenario.parallel.zero_stage), servers(parameter_servers(scenario)),
      overlap_param_gather(scenario.parallel.overlap_param_gather && layout.data > 1), coords(rank_coords(layout)),
      groups(make_groups(scenario, layout, servers, pipeline_ranks_holding_experts(workload, pipeline_stages))) {
  for (int stage = 0; stage < stages; ++stage) {
    stage_units_.push_back(expand(workload, stage_units(workload, pipeline_stages.layers_of(stage))));
    reversed_stage_units_.push_back(reversed(stage_units_.back()));
    gradient_buckets_.push_back(in_buckets(scenario, stage_units_.back()));
    std::vector<std::vector<ModelUnit>>& forward = forward_buckets_.emplace_back();
    for (const std::vector<ModelUnit>& bucket : gradient_buckets_.back()) forward.push_back(reversed(bucket));
  }
}

int LoweringContext::rank_of_stage(int rank, int stage) const {
  const RankCoord& c = coords[rank];
  return layout.rank(c.tp, c.dp, pipeline_stages.rank_of(stage));
}

uint64_t LoweringContext::transfer_key(int receiver, int stage, int microbatch, bool backward) const {
  return ((static_cast<uint64_t>(receiver) * stages + stage) * micro_batches + microbatch) * 2 + backward;
}

int LoweringContext::receiver(uint64_t transfer_key) const {
  return static_cast<int>(transfer_key / transfer_keys_per_receiver());
}

uint64_t LoweringContext::with_receiver(uint64_t transfer_key, int receiver) const {
  return static_cast<uint64_t>(receiver) * transfer_keys_per_receiver() + transfer_key % transfer_keys_per_receiver();
}

std::vector<ActionSpan> action_spans(const RankTasks& rank) {
  std::vector<ActionSpan> spans(rank.actions.size());
  std::vector<bool> seen(rank.actions.size()), compute_seen(rank.actions.size());
  for (size_t i = 0; i < rank.tasks.size(); ++i) {
    const LoweredTask& t = rank.tasks[i];
    if (t.action < 0) continue;
    ActionSpan& span = spans[t.action];
    if (!seen[t.action]) span.first_task = i, seen[t.action] = true;
    span.last_task = i;
    if (!is_model_pass(t.task.kind)) continue;
    if (!compute_seen[t.action]) span.first_compute = i, compute_seen[t.action] = true;
    span.last_compute = i;
  }
  return spans;
}

size_t ready_index(const RankTasks& rank, size_t compute) {
  size_t ready = compute;
  for (size_t next = compute + 1; next < rank.tasks.size(); ++next) {
    const Task& t = rank.tasks[next].task;
    if (t.dim != CommDim::tp && t.dim != CommDim::ep && t.dim != CommDim::cp) break;
    if (t.stream == Stream::compute) ready = next;  // those beside the compute do not follow it
  }
  return ready;
}

void ListEdit::apply() {
  auto by_place = [](const Insertion& a, const Insertion& b) { return a.place < b.place; };
  if (!std::is_sorted(inserted_.begin(), inserted_.end(), by_place))  // passes mostly insert in list order
    std::stable_sort(inserted_.begin(), inserted_.end(), by_place);
  std::vector<LoweredTask>& edited = rank_.spare;
  edited.clear();
  edited.reserve(rank_.tasks.size() + inserted_.size());
  auto next = inserted_.begin();
  auto insert_up_to = [&](size_t place) {
    for (; next != inserted_.end() && next->place <= place; ++next) edited.push_back(std::move(next->task));
  };
  for (size_t i = 0; i < rank_.tasks.size(); ++i) {
    insert_up_to(2 * i);
    edited.push_back(std::move(rank_.tasks[i]));
    insert_up_to(2 * i + 1);
  }
  rank_.tasks.swap(edited);
  inserted_.clear();
}

Task group_collective(const LoweringContext& context, int rank, Stream stream, TaskKind kind, int group_id,
                      double bytes, int stage) {
  const Group& group = context.groups[group_id];
  Task c;
  c.rank = rank;
  c.stream = stream;
  c.kind = kind;
  c.stage = stage;
  c.dim = group.dim;
  c.group = group_id;
  c.bytes = bytes;
  return c;
}

RankTasks lower_rank(LoweringContext& context, int rank, const std::vector<PipelineAction>& actions,
                     RankTasks recycled) {
  RankTasks lowered = lower_compute(context, rank, actions, std::move(recycled));
  lower_tp_collectives(context, lowered);
  lower_pipeline_transfers(context, lowered);
  lower_parameter_gathers(context, lowered);
  lower_overlapped_tp_collectives(context, lowered);
  lower_dp_sync(context, lowered);
  lower_optimizer(context, lowered);
  return lowered;
}

}  // namespace simtrain
