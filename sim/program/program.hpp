#pragma once
// The Program: for every rank, the ordered tasks of one training step, with
// their dependencies. The simulator replays it, the live runner executes it
// and the GUI draws it; it holds nothing specific to any of them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/cost_model.hpp"
#include "sim/model/task_kind.hpp"
#include "sim/model/workload.hpp"
#include "sim/network/collective_algorithm.hpp"

namespace simtrain {

// Which parallel dimension a communication task belongs to.
enum class CommDim { none, tp, pp, dp };
std::string to_string(CommDim dim);

// Tasks on one rank's stream run one at a time, in order; streams of a rank
// run concurrently (as CUDA streams do). TP collectives sit on the compute
// stream because they block the layer that issued them; gradient reductions
// and parameter gathers have a stream each, as in Megatron and FSDP.
enum class Stream { compute, p2p, dp, dp_gather };
std::string to_string(Stream stream);

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

struct Task {
  int id = 0;
  int rank = 0;
  Stream stream = Stream::compute;
  TaskKind kind = TaskKind::F;
  int stage = -1;        // model stage (chunk * p + pipeline rank), -1 if none
  int microbatch = -1;   // -1 if none
  int layer_begin = 0;   // layers [begin, end) covered by a compute task
  int layer_end = 0;
  int work = -1;         // index into Program::works for compute tasks
  CommDim dim = CommDim::none;
  int peer = -1;         // SEND/RECV partner rank
  int group = -1;        // collective group
  int count = 1;         // back-to-back collectives this task stands for
  double bytes = 0;      // message size of each collective / of the transfer
  std::vector<int> deps; // task ids that must finish first; a RECV's one dep is its
                         // matching SEND, whose transfer it spans
  std::string name;      // "s3 F mb7" (stage, kind, micro-batch; " L4-7" after it for part of a stage's
                         // layers), "allreduce tp5 24MiB x9", "send act s2->s3 mb7 24MiB", "recv grad s3->s2 mb7"
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
  std::vector<Task> tasks;                    // indexed by id
  std::vector<std::vector<int>> rank_tasks;   // task ids of each rank, in issue order
};

// A rank's tasks as an executor runs them: one queue per stream, and on the
// p2p stream one per peer (as NCCL's per-peer channels), each in issue order.
// A queue runs its tasks one after another; queues run concurrently.
struct TaskQueue {
  Stream stream = Stream::compute;
  int peer = -1;  // p2p queues only
  std::vector<int> tasks;
};
std::vector<TaskQueue> task_queues(const Program& program, int rank);

// Seconds of a whole Work (its ops run back to back on one stream).
double work_seconds(const CostModel& model, const Work& work, Dtype dtype);

// Human-readable byte sizes: "24MiB", "512KiB", "3.2GiB".
std::string format_bytes(double bytes);

nlohmann::json to_json(const Program& program);

}  // namespace simtrain
