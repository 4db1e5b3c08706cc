#pragma once
// One task of a Program's step (compute, transfer or collective) and the
// stream and parallel dimension it belongs to.
#include <cstdint>
#include <string>

#include "sim/model/task_kind.hpp"

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

}  // namespace simtrain
