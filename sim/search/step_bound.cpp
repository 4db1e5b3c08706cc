#include "sim/search/step_bound.hpp"

#include <algorithm>
#include <map>

#include "sim/network/collective_plan.hpp"
#include "sim/engine/platform_file.hpp"
#include "sim/model/host_launches.hpp"
#include "sim/model/optimizer_step.hpp"
#include "sim/network/fabric.hpp"
#include "sim/scenario/rank_layout.hpp"

namespace simtrain {

namespace {

// The most loaded link's bytes over its bandwidth: a collective takes at least that long.
double bandwidth_seconds(const CollectivePlan& plan, const Fabric& fabric) {
  double seconds = 0;
  for (const auto& [link, bytes] : link_loads(plan, fabric))
    seconds = std::max(seconds, bytes / fabric.links()[link].bytes_per_second);
  return seconds;
}

// NCCL picks the faster of ring and tree for an all-reduce; the others are rings.
double collective_seconds(TaskKind kind, const std::vector<int>& ranks, double bytes, const Fabric& fabric) {
  if (ranks.size() < 2 || bytes <= 0) return 0;
  double seconds = bandwidth_seconds(plan_collective(kind, ranks, bytes, 1, Algorithm::ring, fabric), fabric);
  if (kind == TaskKind::ALLREDUCE)
    seconds = std::min(seconds, bandwidth_seconds(plan_collective(kind, ranks, bytes, 1, Algorithm::tree, fabric), fabric));
  return seconds;
}

class StepBound {
public:
  StepBound(const Scenario& s, const Workload& w, const CostModel& cost_model)
      : s_(s), w_(w), cost_model_(cost_model), layout_(s.parallel), t_(layout_.tensor), p_(layout_.pipeline),
        d_(layout_.data), stages_(static_cast<int>(w.stage_layers.size())),
        fabric_(with_platform_routes(s.cluster.topology, layout_.world_size()), layout_.world_size()) {
    for (int r = 0; r < t_; ++r) tp_ranks_.push_back(r);
    for (int stage = 0; stage < stages_; ++stage) {
      Passes& x = stage_.emplace_back();
      for (const auto& [unit, count] : units(stage)) {
        x.forward += count * pass_seconds(unit->forward);
        x.backward += count * (pass_seconds(unit->backward_input) + pass_seconds(unit->backward_weight));
        x.recompute += count * pass_seconds(unit->recompute);
        for (const Pass* pass : {&unit->forward, &unit->backward_input, &unit->backward_weight, &unit->recompute})
          x.launch += count * host_work(pass->ops, s).launch_seconds;
        x.gradient_bytes += count * unit->parameters * w.grad_bytes_per_parameter;
        x.first_unit_gradient_bytes = units(stage).front().first->parameters * w.grad_bytes_per_parameter;
      }
    }
  }

  // A rank cannot start before the first micro-batch has gone forward through
  // the stages before it, runs its compute stream's tasks one at a time, and
  // after its last backward both the gradients' synchronisation and optimizer
  // and (unless ZB-H1 delays weight gradients) the last backward's way back
  // to stage 0 remain.
  double seconds() {
    double bound = 0;
    for (int pp = 0; pp < p_; ++pp) {
      double warmup = 0, cooldown = 0;
      for (int j = 0; j < pp; ++j) {
        warmup += stage_[j].forward + send_seconds(j, j + 1);
        cooldown += stage_[j].backward + (j > 0 ? send_seconds(j, j - 1) : 0);
      }
      double per_micro_batch = 0, launch_per_micro_batch = 0, gradient_bytes = 0, last_bucket_bytes = 0;
      for (int stage = pp; stage < stages_; stage += p_) {
        const Passes& x = stage_[stage];
        per_micro_batch += x.forward + x.backward + x.recompute;
        launch_per_micro_batch += x.launch;
        if (stage + 1 < stages_) per_micro_batch += send_seconds(stage, stage + 1);
        if (stage > 0) per_micro_batch += send_seconds(stage, stage - 1);
        gradient_bytes += x.gradient_bytes;
        last_bucket_bytes = x.first_unit_gradient_bytes;  // chunk 0's first unit is reduced last
      }
      const double compute = static_cast<double>(s_.micro_batches()) * per_micro_batch + codec_seconds(gradient_bytes);
      const double tail = gradient_sync_seconds(pp, s_.parallel.overlap_grad_reduce ? last_bucket_bytes : gradient_bytes) +
                          codec_seconds(gradient_bytes) + optimizer_seconds(gradient_bytes) + gather_seconds(pp, gradient_bytes);
      const bool chained_backward = s_.parallel.schedule != ScheduleKind::zb_h1;
      bound = std::max(bound, warmup + compute + std::max(tail, chained_backward ? cooldown : 0.0));
      // The rank's host launches every pass's kernels one after another.
      bound = std::max(bound, static_cast<double>(s_.micro_batches()) * launch_per_micro_batch);
    }
    return bound;
  }

private:
  struct Passes {
    double forward = 0, backward = 0, recompute = 0;  // one micro-batch, TP collectives included
    double launch = 0;  // the host's time to launch one micro-batch's kernels (sim/model/host_launches.hpp)
    double gradient_bytes = 0, first_unit_gradient_bytes = 0;
  };

  // The units of a stage (sim/model/workload.hpp), each with how many times it occurs.
  std::vector<std::pair<const UnitWork*, int>> units(int stage) const {
    const StageUnits held = stage_units(w_, stage);
    std::vector<std::pair<const UnitWork*, int>> list;
    if (held.embedding) list.push_back({&w_.embedding, 1});
    const auto layers = w_.layer_works_among(held.first_layer, held.layers);
    list.insert(list.end(), layers.begin(), layers.end());
    if (held.head) list.push_back({&w_.head, 1});
    return list;
  }

  double pass_seconds(const Pass& pass) {
    double total = accumulate_op_seconds(0, cost_model_, pass.ops, s_.training.dtype);
    for (const TpCollectives& c : pass.tp) {
      // Overlapped ones may hide behind the compute entirely; CP's exchange is over other ranks than TP's.
      if (c.overlapped || c.group == LayerGroup::context_a2a || c.group == LayerGroup::context_ring) continue;
      auto [it, inserted] = tp_seconds_.try_emplace({c.kind, c.bytes}, 0);
      if (inserted) it->second = collective_seconds(c.kind, tp_ranks_, c.bytes, fabric_);
      total += c.count * it->second;
    }
    return total;
  }

  // The first tensor-parallel rank of a data- and pipeline-parallel coordinate.
  int rank_of(int dp, int pp) const { return layout_.rank(0, dp, pp); }

  // A pipeline transfer between stages blocks the compute stream unless overlapped.
  double send_seconds(int from_stage, int to_stage) const {
    if (s_.parallel.overlap_p2p_communication) return 0;
    double bandwidth = 1e300;
    for (int link : fabric_.route(rank_of(0, from_stage % p_), rank_of(0, to_stage % p_)))
      bandwidth = std::min(bandwidth, fabric_.links()[link].bytes_per_second);
    return w_.stage_boundary_bytes / bandwidth;
  }

  std::vector<int> dp_ranks(int pp) const {
    std::vector<int> ranks;
    for (int dp = 0; dp < d_; ++dp) ranks.push_back(rank_of(dp, pp));
    return ranks;
  }

  // What is left of the gradients' all-reduce (ZeRO: reduce-scatter) after the last backward.
  double gradient_sync_seconds(int pp, double bytes) const {
    const DpSync sync = s_.parallel.dp_sync;
    if (d_ < 2 || s_.parallel.zero_stage == 3 || sync == DpSync::hierarchical || sync == DpSync::parameter_server) return 0;
    const TaskKind kind = s_.parallel.zero_stage == 0 ? TaskKind::ALLREDUCE : TaskKind::REDUCESCATTER;
    return collective_seconds(kind, dp_ranks(pp), bytes / s_.parallel.dp_compression_ratio, fabric_);
  }

  double codec_seconds(double gradient_bytes) const {
    if (d_ < 2 || s_.parallel.dp_compression_ratio <= 1) return 0;
    return gradient_bytes * s_.parallel.dp_compression_seconds_per_byte;
  }

  double optimizer_seconds(double gradient_bytes) const {
    const double parameters = gradient_bytes / w_.grad_bytes_per_parameter;
    const double sharded = s_.parallel.zero_stage >= 1 ? parameters / d_ : parameters;
    const std::vector<Op> ops =
        optimizer_step_ops({.updated_parameters = sharded,
                            .gradient_parameters = s_.parallel.zero_stage >= 2 ? sharded : parameters,
                            .grad_bytes_per_parameter = w_.grad_bytes_per_parameter});
    return accumulate_op_seconds(0, cost_model_, ops, s_.training.dtype);
  }

  // The distributed optimizer (ZeRO 1, 2) all-gathers the updated bf16 weights
  // after it, unless overlap_param_gather hides that behind the next forward.
  double gather_seconds(int pp, double gradient_bytes) const {
    if (d_ < 2 || s_.parallel.zero_stage < 1 || s_.parallel.zero_stage > 2 || s_.parallel.overlap_param_gather) return 0;
    const double parameters = gradient_bytes / w_.grad_bytes_per_parameter;
    return collective_seconds(TaskKind::ALLGATHER, dp_ranks(pp), parameters * w_.weight_bytes_per_parameter, fabric_);
  }

  const Scenario& s_;
  const Workload& w_;
  const CostModel& cost_model_;
  const RankLayout layout_;
  const int t_, p_, d_, stages_;
  const Fabric fabric_;
  std::vector<int> tp_ranks_;
  std::vector<Passes> stage_;
  std::map<std::pair<TaskKind, double>, double> tp_seconds_;
};

}  // namespace

double step_lower_bound_seconds(const Scenario& s, const Workload& w, const CostModel& cost_model) {
  return StepBound(s, w, cost_model).seconds();
}

}  // namespace simtrain
