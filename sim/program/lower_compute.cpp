// The first pass: each pipeline action becomes its compute tasks, with no
// dependencies yet (the later passes add what they wait for). A backward
// under activation recomputation is preceded by its recompute task, and the
// last backward of a chunk, under --overlap-grad-reduce, is split where its
// gradient buckets close (the gradient-sync pass reduces each bucket then);
// under --overlap-param-gather the first forward of a chunk is split where
// they open (each piece waits for its bucket's weight gather).
#include <algorithm>
#include <map>

#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

// The layers [begin, end) `units` cover ([0, 0) when none).
void set_layer_range(std::span<const ModelUnit> units, Task& task) {
  int begin = 1 << 30, end = -1;
  for (const ModelUnit& u : units)
    if (u.layer >= 0) begin = std::min(begin, u.layer), end = std::max(end, u.layer + 1);
  if (end < 0) begin = end = 0;
  task.layer_begin = begin;
  task.layer_end = end;
}

// The passes a compute task runs over each of its units.
constexpr PassOf kForward[] = {&UnitWork::forward};
constexpr PassOf kRecompute[] = {&UnitWork::recompute};
constexpr PassOf kBackward[] = {&UnitWork::backward_input, &UnitWork::backward_weight};
constexpr PassOf kBackwardInput[] = {&UnitWork::backward_input};
constexpr PassOf kBackwardWeight[] = {&UnitWork::backward_weight};

class ComputeLowering {
public:
  ComputeLowering(LoweringContext& context, int rank, const std::vector<PipelineAction>& actions, RankTasks recycled)
      : c_(context), split_backward_(splits_backward(context.scenario.parallel.schedule)),
        // ZeRO-3 reduces gradients after every backward instead.
        overlap_grad_reduce_(context.zero_stage < 3 && context.scenario.parallel.overlap_grad_reduce),
        lowered_(std::move(recycled)) {
    lowered_.recycle(rank, actions);
    for (size_t i = 0; i < actions.size(); ++i) {
      if (actions[i].kind == (split_backward_ ? TaskKind::W : TaskKind::B)) last_grad_action_[actions[i].chunk] = i;
      if (actions[i].kind == TaskKind::F) first_forward_action_.try_emplace(actions[i].chunk, i);
    }
  }

  RankTasks lower() {
    for (int i = 0; i < static_cast<int>(lowered_.actions.size()); ++i) lower_action(i);
    return std::move(lowered_);
  }

private:
  void lower_action(int i) {
    const PipelineAction& a = lowered_.actions[i];
    const int stage = c_.pipeline_stages.of(a.chunk, c_.coords[lowered_.rank].pp);
    const std::vector<ModelUnit>& units = c_.units(stage);
    const bool closes_gradients = overlap_grad_reduce_ && last_grad_action_.at(a.chunk) == static_cast<size_t>(i);
    switch (a.kind) {
      case TaskKind::F: {
        const bool opens_gradients = c_.overlap_param_gather && first_forward_action_.at(a.chunk) == static_cast<size_t>(i);
        if (!opens_gradients) {
          add(i, TaskKind::F, stage, units, kForward, true);
          break;
        }
        const auto& buckets = c_.forward_buckets(stage);  // in backward order
        for (auto bucket = buckets.rbegin(); bucket != buckets.rend(); ++bucket)
          add(i, TaskKind::F, stage, *bucket, kForward, buckets.size() == 1).opens_bucket = true;
        break;
      }
      case TaskKind::B: {
        if (c_.scenario.training.recompute != Recompute::none) add(i, TaskKind::R, stage, units, kRecompute, true);
        const std::span<const PassOf> passes = split_backward_ ? std::span<const PassOf>(kBackwardInput) : kBackward;
        backward(i, TaskKind::B, stage, passes, closes_gradients && !split_backward_);
        break;
      }
      case TaskKind::W: backward(i, TaskKind::W, stage, kBackwardWeight, closes_gradients); break;
      default: break;  // schedules hold F, B and W only
    }
  }

  // A backward over the stage's units in reverse, in one task per gradient
  // bucket when it produces the chunk's last gradients.
  void backward(int i, TaskKind kind, int stage, std::span<const PassOf> passes, bool in_buckets) {
    if (!in_buckets) {
      add(i, kind, stage, c_.reversed_units(stage), passes, true);
      return;
    }
    const auto& buckets = c_.gradient_buckets(stage);
    for (const std::vector<ModelUnit>& bucket : buckets)
      add(i, kind, stage, bucket, passes, buckets.size() == 1).closes_bucket = true;
  }

  // A compute task running `passes` over `units`; tasks over a whole stage
  // are named (task_name) and share their work without their layer range.
  LoweredTask& add(int i, TaskKind kind, int stage, std::span<const ModelUnit> units, std::span<const PassOf> passes,
                   bool whole_stage) {
    Task task;
    task.kind = kind;
    task.stage = stage;
    task.microbatch = lowered_.actions[i].microbatch;
    task.part_of_stage = !whole_stage;
    set_layer_range(units, task);
    LoweredTask& lowered = lowered_.tasks.emplace_back(lowered_.make(task, {}, i));
    lowered.work = c_.compute_work(task, [&] {
      std::string name = to_string(kind) + " s" + std::to_string(stage);
      if (!whole_stage) name += " L" + std::to_string(task.layer_begin) + "-" + std::to_string(task.layer_end - 1);
      Work work{name, {}};
      for (const ModelUnit& unit : units)
        for (PassOf pass : passes) {
          const std::vector<Op>& ops = (unit.work->*pass).ops;
          work.ops.insert(work.ops.end(), ops.begin(), ops.end());
        }
      return work;
    });
    lowered.units = units;
    lowered.passes = passes;
    return lowered;
  }

  LoweringContext& c_;
  const bool split_backward_, overlap_grad_reduce_;
  std::map<int, size_t> last_grad_action_;  // chunk -> the last action that produces its weight gradients
  std::map<int, size_t> first_forward_action_;  // chunk -> its first forward
  RankTasks lowered_;
};

}  // namespace

RankTasks lower_compute(LoweringContext& context, int rank, const std::vector<PipelineAction>& actions,
                        RankTasks recycled) {
  return ComputeLowering(context, rank, actions, std::move(recycled)).lower();
}

}  // namespace simtrain
