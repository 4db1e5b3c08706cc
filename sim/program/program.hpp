#pragma once
// The Program: for every rank, the ordered tasks of one training step, with
// their dependencies. The simulator replays it, the live runner executes it
// and the GUI draws it; it holds nothing specific to any of them.
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/cost_model.hpp"
#include "sim/model/workload.hpp"
#include "sim/network/collective_algorithm.hpp"
#include "sim/program/task.hpp"
#include "sim/program/task_table.hpp"

namespace simtrain {

// The ops a compute task runs; shared by all tasks of the same shape.
struct Work {
  std::string name;  // e.g. "F s3" (kind, stage; " L4-7" after it for part of a stage's layers), "optimizer"
  std::vector<Op> ops;
  double fixed_seconds = 0;  // beyond its ops: gradient compression, at the scenario's stated cost
  double flops() const;
  double bytes() const;
};

struct Group {
  int id = 0;
  CommDim dim = CommDim::none;
  std::string name;        // "tp5", "dp12", "emb0"
  std::vector<int> ranks;  // in ring order
  std::optional<Algorithm> allreduce_algorithm;  // empty: the executor chooses
  // Parameter servers (hosts after the GPUs) the group synchronises through:
  // a reduce-scatter pushes each rank's gradients to them, in one shard per
  // server; an all-gather pulls the summed shards back.
  int servers = 0;
};

// Where a rank sits in the parallel layout (Megatron order: tp fastest, then dp, then pp).
struct RankCoord {
  int tp = 0, dp = 0, pp = 0;
};

struct Program {
  int world_size = 0;
  int tensor_size = 1;
  int pipeline_size = 1;
  int virtual_stages = 1;
  int micro_batches = 1;
  int servers = 0;                           // parameter-server hosts beside the GPUs
  std::vector<RankCoord> coords;             // indexed by rank
  std::vector<Work> works;
  std::vector<Group> groups;
  TaskTable tasks;                           // indexed by id

  // The ids of the tasks that must finish first. A RECV's one dependency is
  // its matching SEND, whose transfer it receives.
  TaskDeps deps(int id) const { return tasks.deps(id); }
  TaskDeps deps(const Task& task) const { return tasks.deps(task.id); }
  // A rank's task ids in issue order; throws std::out_of_range for a rank the Program has no list for.
  RankTaskIds rank_tasks(int rank) const { return tasks.rank_tasks(rank); }
  int rank_lists() const { return tasks.rank_lists(); }

  // Building a Program (the numbering pass, the trace reader, tests):
  // `task` becomes the next id, waiting for `deps`; returns its id.
  int add_task(Task task, std::span<const int32_t> deps = {}) { return tasks.add(task, deps); }
  // The tasks added since the last rank's list make the next rank's, in id order.
  void end_rank() { tasks.end_rank(); }
  // Every rank's task ids in issue order, in any order of ids.
  void set_rank_tasks(const std::vector<std::vector<int>>& ids_of_rank) { tasks.set_rank_tasks(ids_of_rank); }

  // The names tasks were recorded under (a Program read from a trace, or made
  // by hand), indexed by id; empty: task_name formats them from the fields.
  std::vector<std::string> recorded_names;
};

// "s3 F mb7" (stage, kind, micro-batch; " L4-7" after it for part of a stage's
// layers), "allreduce tp5 24MiB x9", "send act s2->s3 mb7 24MiB", "recv grad s3->s2 mb7",
// "compress 24MiB /4", "optimizer"; formatted from the task's fields as the
// lowering passes name them (sim/program/task_name.cpp).
std::string task_name(const Program& program, const Task& task);

// A rank's tasks as an executor runs them: one queue per stream, and on the
// p2p stream one per peer (as NCCL's per-peer channels), each in issue order.
// A queue runs its tasks one after another; queues run concurrently.
// A RECV on the p2p stream is pre-posted and passive: it spans its SEND's
// transfer and blocks nothing (eager). One on the compute stream is posted
// there, in order, and blocks it; its transfer starts once both it and its
// SEND are posted (paired).
inline bool is_posted_in_order(const Task& recv) { return recv.stream != Stream::p2p; }

struct TaskQueue {
  Stream stream = Stream::compute;
  int peer = -1;  // p2p queues only
  std::vector<int> tasks;
};
// `receives_ahead`: every RECV on its peer's p2p queue, posted ahead there as
// an eager one is, whatever its stream. For an executor that issues
// transfers one at a time (live/): NCCL and MPI hold a send until its
// receive is posted, so two ranks that each send, then receive, on one
// stream would wait on each other (Megatron posts such pairs as one batch).
std::vector<TaskQueue> task_queues(const Program& program, int rank, bool receives_ahead = false);

// Seconds of a whole Work (its ops run back to back on one stream).
double work_seconds(const CostModel& model, const Work& work, Dtype dtype);

// Human-readable byte sizes: "24MiB", "512KiB", "3.2GiB".
std::string format_bytes(double bytes);

// The Program as one JSON document (`simtrain schedule`), written rank by
// rank; `on_rank` (if set) is called after each rank with the ranks written.
void write_json(std::ostream& out, const Program& program, const std::function<void(int ranks_written)>& on_rank = {});

}  // namespace simtrain
