#pragma once
// The Program: for every rank, the ordered tasks of one training step, with
// their dependencies. The simulator replays it, the live runner executes it
// and the GUI draws it; it holds nothing specific to any of them.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/cost_model.hpp"
#include "sim/model/task_kind.hpp"
#include "sim/model/workload.hpp"
#include "sim/network/collective_algorithm.hpp"

namespace simtrain {

// Which parallel dimension a communication task belongs to (ep: expert
// parallelism's token dispatch and combine, blocking the layer as TP's do;
// cp: context parallelism's K/V exchange, beside the layer's attention or blocking it).
enum class CommDim : uint8_t { none, tp, pp, dp, ep, cp };
std::string to_string(CommDim dim);

// Tasks on one rank's stream run one at a time, in order; streams of a rank
// run concurrently (as CUDA streams do). TP collectives sit on the compute
// stream because they block the layer that issued them, but for those that
// run beside compute (tp_overlap: sequence parallelism's backward re-gather,
// ring attention's K/V exchange);
// gradient reductions and parameter gathers have a stream each, as in
// Megatron and FSDP.
enum class Stream : uint8_t { compute, p2p, dp, dp_gather, tp_overlap };
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

// One task of the step: fixed-size fields only, as Programs reach 10^7 tasks.
// Its name is formatted on demand (task_name) and its dependencies are kept
// in the Program's flat arrays (Program::deps).
struct Task {
  int id = 0;
  int rank = 0;
  int stage = -1;        // model stage (chunk * p + pipeline rank), -1 if none
  int microbatch = -1;   // -1 if none
  int layer_begin = 0;   // layers [begin, end) covered by a compute task
  int layer_end = 0;
  int work = -1;         // index into Program::works for compute tasks
  int peer = -1;         // SEND/RECV partner rank
  int group = -1;        // collective group
  int count = 1;         // back-to-back collectives this task stands for
  double bytes = 0;      // message size of each collective / of the transfer
  Stream stream = Stream::compute;
  TaskKind kind = TaskKind::F;
  CommDim dim = CommDim::none;
  bool part_of_stage = false;  // F, R, B, W over part of its stage's layers (one gradient bucket's)
  bool backward = false;       // SEND, RECV of gradients (to the stage before), not of activations
  // SEND, RECV: issued with the transfer before it on its stream as one batch
  // (Megatron's batch_isend_irecv), whose transfers all end when the last does.
  bool joins_batch = false;
};
// Ten ints, the double and six bytes: the Task is most of a Program's memory.
static_assert(sizeof(Task) <= 56, "a Task holds fixed-size fields only; names and dependencies live elsewhere");

// One rank's task ids in issue order: the positions [begin, end) of the
// Program's issue order, which are the ids themselves when the Program is
// numbered rank by rank (`listed` null), as build_program numbers it.
class RankTaskIds {
public:
  class iterator {
  public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = int;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = int;

    iterator() = default;
    iterator(const int32_t* listed, int32_t position) : listed_(listed), position_(position) {}
    int operator*() const { return listed_ ? listed_[position_] : position_; }
    int operator[](difference_type n) const { return *(*this + n); }
    iterator& operator+=(difference_type n) { position_ += static_cast<int32_t>(n); return *this; }
    iterator& operator-=(difference_type n) { return *this += -n; }
    iterator& operator++() { return *this += 1; }
    iterator& operator--() { return *this -= 1; }
    iterator operator++(int) { iterator before = *this; ++*this; return before; }
    iterator operator--(int) { iterator before = *this; --*this; return before; }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(iterator a, iterator b) { return a.position_ - b.position_; }
    friend bool operator==(iterator a, iterator b) { return a.position_ == b.position_; }
    friend std::strong_ordering operator<=>(iterator a, iterator b) { return a.position_ <=> b.position_; }

  private:
    const int32_t* listed_ = nullptr;
    int32_t position_ = 0;
  };
  using value_type = int;
  using const_iterator = iterator;

  RankTaskIds(const int32_t* listed, int32_t begin, int32_t end) : listed_(listed), begin_(begin), end_(end) {}
  iterator begin() const { return {listed_, begin_}; }
  iterator end() const { return {listed_, end_}; }
  size_t size() const { return static_cast<size_t>(end_ - begin_); }
  bool empty() const { return begin_ == end_; }
  int operator[](size_t i) const { return begin()[static_cast<std::ptrdiff_t>(i)]; }
  int front() const { return *begin(); }
  int back() const { return *(end() - 1); }

private:
  const int32_t* listed_;
  int32_t begin_, end_;
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
  std::vector<Task> tasks;                   // indexed by id

  // The ids of the tasks that must finish first. A RECV's one dependency is
  // its matching SEND, whose transfer it receives.
  std::span<const int32_t> deps(int id) const {
    return {dep_ids.data() + dep_begin[id], dep_ids.data() + dep_begin[id + 1]};
  }
  std::span<const int32_t> deps(const Task& task) const { return deps(task.id); }
  // A rank's task ids in issue order; throws std::out_of_range for a rank the Program has no list for.
  RankTaskIds rank_tasks(int rank) const;
  int rank_lists() const { return static_cast<int>(rank_begin.size()) - 1; }

  // Building a Program (the numbering pass, the trace reader, tests):
  // `task` becomes the next id, waiting for `deps`; returns its id.
  int add_task(Task task, std::span<const int32_t> deps = {});
  // The tasks added since the last rank's list make the next rank's, in id order.
  void end_rank();
  // Every rank's task ids in issue order, in any order of ids.
  void set_rank_tasks(const std::vector<std::vector<int>>& ids_of_rank);

  // Dependencies of task `id`: dep_ids[dep_begin[id], dep_begin[id + 1]).
  std::vector<int32_t> dep_begin = {0};
  std::vector<int32_t> dep_ids;
  // Rank r's tasks: the positions [rank_begin[r], rank_begin[r + 1]) of the
  // issue order, which is `issue_order`, or the ids themselves when it is empty.
  std::vector<int32_t> rank_begin = {0};
  std::vector<int32_t> issue_order;
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

nlohmann::json to_json(const Program& program);

}  // namespace simtrain
