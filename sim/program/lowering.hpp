#pragma once
// The Program lowered in passes, in the manner of PyTorch's
// torch/distributed/pipelining/schedules.py (_add_send_recv,
// _add_unshard_reshard, _add_reduce_grad): each pipeline rank's schedule
// becomes a list of compute tasks, each pass then adds one kind of work to
// every rank's list where it belongs, and numbering turns the lists into the
// Program's tasks:
//
//   lower_compute             F, R, B, W of the schedule; the last backward of a
//                             chunk split where its gradient buckets close (and, with
//                             overlap_param_gather, its first forward where they open)
//   lower_tp_collectives      each compute's blocking tensor-parallel collectives (and expert
//                             parallelism's all-to-alls over the EP group), right after it
//   lower_pipeline_transfers  RECV before the compute that reads a stage boundary,
//                             SEND after the one that writes it
//   lower_parameter_gathers   ZeRO-3's gather of a chunk's parameters before each pass;
//                             overlap_param_gather's bucket gathers at the step's start
//   lower_overlapped_tp_collectives  the TP collectives that run beside a compute
//                             (sequence parallelism's backward re-gather), starting with it
//   lower_dp_sync             gradient reductions (buckets, compression, hierarchical,
//                             parameter servers), the tied-embedding all-reduce
//   lower_optimizer           the optimizer step, then ZeRO-1/2's weight all-gather
//
// build_program (sim/program/program_builder.hpp) runs them in this order.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/model/workload.hpp"
#include "sim/program/lowering_groups.hpp"
#include "sim/program/pipeline_schedule.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/rank_layout.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

using PassOf = Pass UnitWork::*;

// One model unit a compute task runs: a layer, the embedding or the head.
struct ModelUnit {
  const UnitWork* work = nullptr;
  int layer = -1;  // -1 for the embedding and the head
};

double parameters(std::span<const ModelUnit> units);
double expert_parameters(std::span<const ModelUnit> units);  // of those, the routed experts'


// A task on its rank's list before numbering. Its dependencies name tasks of
// the same rank by label, which stays put while passes insert tasks; a RECV's
// dependency on its SEND, on another rank, is found by `transfer` when numbered.
struct LoweredTask {
  Task task;                     // id, deps and work are set when numbered
  int label = 0;                 // unique on its rank
  std::vector<int> deps;         // labels of the tasks it waits for
  int action = -1;               // the pipeline action it lowers; -1 for none (the step's start or end)
  const Work* work = nullptr;    // compute, codec and optimizer tasks: shared by tasks of one shape
  // F, R, B, W: the units it runs, in execution order, and the passes it runs
  // over each; views of the LoweringContext's unit lists and of static arrays.
  std::span<const ModelUnit> units;
  std::span<const PassOf> passes;
  bool closes_bucket = false;    // a backward that produces the last gradients of `units`, one bucket
  bool opens_bucket = false;     // overlap_param_gather: the first forward over `units`, one bucket
  bool gradients_ready = false;  // ends a gradient reduction (or decompression): the optimizer waits for it
  std::optional<double> bucket_parameters;  // ends a gradient bucket's reduction: the bucket's parameters
  uint64_t transfer = 0;         // SEND, RECV: the key that pairs them (LoweringContext::transfer_key)
};

// One rank's list, and the pipeline actions it was lowered from.
struct RankTasks {
  int rank = 0;
  std::vector<PipelineAction> actions;
  std::vector<LoweredTask> tasks;
  std::vector<LoweredTask> spare;  // where ListEdit::apply builds the edited list
  int next_label = 0;

  // Empties the lists for `rank`'s, keeping their memory: reused rank after
  // rank, it is allocated (and its pages faulted in) once, not once a rank.
  void recycle(int rank, const std::vector<PipelineAction>& actions);

  // `task` on this rank with a fresh label, lowered from `action`; the caller places it on the list.
  LoweredTask make(Task task, std::vector<int> deps, int action = -1);
};

// What every pass reads: the parallel layout, the units of each model stage,
// the communication groups, and the works that tasks of one shape share.
class LoweringContext {
public:
  LoweringContext(const Scenario& scenario, const Workload& workload);

  const Scenario& scenario;
  const Workload& workload;
  const RankLayout layout;
  const PipelineStages pipeline_stages;  // which rank and chunk runs each model stage
  const int virtual_stages, micro_batches, stages, zero_stage;
  const int servers;  // parameter-server hosts; 0 without them
  // The distributed optimizer's weight all-gathers run during the forward
  // (overlap_param_gather, with data parallelism), not after the optimizer.
  const bool overlap_param_gather;
  const std::vector<RankCoord> coords;
  const CommGroups groups;

  // The units of a model stage, in forward order, and in backward order.
  const std::vector<ModelUnit>& units(int stage) const { return stage_units_[stage]; }
  const std::vector<ModelUnit>& reversed_units(int stage) const { return reversed_stage_units_[stage]; }
  // A stage's gradients in buckets, in the order the backward produces them
  // (each bucket's units too), and each bucket's units in forward order.
  const std::vector<std::vector<ModelUnit>>& gradient_buckets(int stage) const { return gradient_buckets_[stage]; }
  const std::vector<std::vector<ModelUnit>>& forward_buckets(int stage) const { return forward_buckets_[stage]; }
  // The rank of the same tp and dp coordinates that runs `stage`.
  int rank_of_stage(int rank, int stage) const;
  // Pairs a transfer's SEND and RECV: one digit per field, as the receiving rank sees it
  // (below 2^63 within sim/base/limits.hpp's task limit).
  uint64_t transfer_key(int receiver, int stage, int microbatch, bool backward) const;
  // A transfer key's receiving rank, and the same key for another receiver.
  int receiver(uint64_t transfer_key) const;
  uint64_t with_receiver(uint64_t transfer_key, int receiver) const;

  // The one Work of `key`, made by `make()` the first time it is asked for.
  template <class Make>
  const Work* shared_work(const std::string& key, Make make) {
    auto [it, inserted] = works_.try_emplace(key);
    if (inserted) it->second = make();
    return &it->second;
  }

  // The one Work of compute tasks of `task`'s kind and stage (and layers, for
  // part of a stage), as shared_work's key "F s3" or "F s3 L4-7" would find
  // it, without formatting a key for every task.
  template <class Make>
  const Work* compute_work(const Task& task, Make make) {
    const int begin = task.part_of_stage ? task.layer_begin : 0, end = task.part_of_stage ? task.layer_end : 0;
    auto [it, inserted] = compute_works_.try_emplace({task.kind, task.stage, task.part_of_stage, begin, end});
    if (inserted) it->second = make();
    return &it->second;
  }

private:
  uint64_t transfer_keys_per_receiver() const { return static_cast<uint64_t>(stages) * micro_batches * 2; }

  std::vector<std::vector<ModelUnit>> stage_units_, reversed_stage_units_;
  std::vector<std::vector<std::vector<ModelUnit>>> gradient_buckets_, forward_buckets_;  // of each stage
  std::unordered_map<std::string, Work> works_;
  std::map<std::tuple<TaskKind, int, bool, int, int>, Work> compute_works_;  // kind, stage, part_of_stage, layers
};

// Where a pipeline action's tasks sit on a rank's list (indices into tasks).
struct ActionSpan {
  size_t first_task = 0, last_task = 0;        // all tasks lowered from the action
  size_t first_compute = 0, last_compute = 0;  // its tasks that run model units (F, R, B, W)
};
std::vector<ActionSpan> action_spans(const RankTasks& rank);

// The task after which a compute task's outputs are ready: its last blocking TP (EP, CP) collective, or itself.
size_t ready_index(const RankTasks& rank, size_t compute);

// Tasks to place before or after tasks of a rank's list, all placed at once
// by apply(); tasks given for the same place keep the order they were given in.
class ListEdit {
public:
  explicit ListEdit(RankTasks& rank) : rank_(rank) {}
  void insert_before(size_t index, LoweredTask task) { inserted_.push_back({2 * index, std::move(task)}); }
  void insert_after(size_t index, LoweredTask task) { inserted_.push_back({2 * index + 1, std::move(task)}); }
  void apply();

private:
  // A task to insert, and where: 2 * index before the task at index, 2 * index + 1 after it.
  struct Insertion {
    size_t place;
    LoweredTask task;
  };
  RankTasks& rank_;
  std::vector<Insertion> inserted_;  // in the order given: one vector for all, not one per place
};

// The parameters of `units` by the group their gradients are reduced and
// their weights sharded over: with expert parallelism the routed experts'
// over the rank's expert-data-parallel group (none where that group is one
// rank: each holds its experts whole), the rest over its data-parallel group
// (always listed first, even when empty).
struct ShardedParameters {
  int group;
  double parameters;
};
std::vector<ShardedParameters> parameters_by_shard_group(const LoweringContext& context, int rank,
                                                         std::span<const ModelUnit> units);

// A collective of `group` ("allreduce dp4 24MiB", or "push"/"pull" through parameter servers: task_name).
Task group_collective(const LoweringContext& context, int rank, Stream stream, TaskKind kind, int group,
                      double bytes, int stage = -1);

// The passes, in the order build_program runs them.
// `recycled`: a rank's lists done with, whose memory the new ones reuse.
RankTasks lower_compute(LoweringContext& context, int rank, const std::vector<PipelineAction>& actions,
                        RankTasks recycled = {});
void lower_tp_collectives(const LoweringContext& context, RankTasks& rank);
void lower_pipeline_transfers(const LoweringContext& context, RankTasks& rank);
void lower_parameter_gathers(const LoweringContext& context, RankTasks& rank);
void lower_overlapped_tp_collectives(const LoweringContext& context, RankTasks& rank);
void lower_dp_sync(LoweringContext& context, RankTasks& rank);
void lower_optimizer(LoweringContext& context, RankTasks& rank);

// All passes over one rank.
RankTasks lower_rank(LoweringContext& context, int rank, const std::vector<PipelineAction>& actions,
                     RankTasks recycled = {});

}  // namespace simtrain
