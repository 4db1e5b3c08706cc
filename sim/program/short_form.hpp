#pragma once
// A task's short form: one line that names it among its rank's tasks, in the
// manner of PyTorch pipelining's actions ("2F7", "2SEND_F7"):
//
//   s2 F mb7                        forward of micro-batch 7 on model stage 2
//   s2 B mb7 L10-15                 a piece of a backward split at gradient buckets (layers 10..15)
//   s2 SEND_F mb7 ->s3              its activations to stage 3; s3 RECV_F mb7 <-s2 receives them
//   s2 SEND_B mb7 ->s1              input gradients back to stage 1
//   s0 ALLREDUCE_F mb3 tp0 24MiB x4 the TP all-reduces of that forward: 4 of 24MiB in group tp0
//   s1 ALLREDUCE dp4 1.5GiB         a gradient bucket's data-parallel all-reduce
//   s1 PUSH ps2 1.5GiB              the same through parameter servers (PULL: gathering back)
//   s1 COMPRESS 1.5GiB /4           gradient compression, 4 times smaller
//   OPT                             the optimizer step
//
// The fields, in this order, each left out when the task has none:
//   s<stage> KIND[_PASS] mb<micro-batch> L<first>-<last>|Lnone ->s<peer>|<-s<peer> <group> <size> /<ratio>
//   x<count> #<occurrence>
// PASS is the compute pass (F, B, W, R) a transfer or TP collective carries.
// Lnone is a piece without layers (the stage's embedding or head alone). Tasks
// the other fields do not tell apart (a stage's gradient buckets of one size,
// say) are numbered in list order: the second prints "#2", the first nothing.
// So no two tasks of a rank print the same, and find_task finds one from its
// short form. Task::name, which traces show, is a separate, older text.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

// A short form read into its fields.
struct TaskKey {
  int stage = -1;
  TaskKind kind = TaskKind::F;
  std::optional<TaskKind> pass;              // SEND_F, RECV_B, ALLREDUCE_R
  bool through_servers = false;              // PUSH (a REDUCESCATTER) or PULL (an ALLGATHER)
  int microbatch = -1;
  std::optional<std::pair<int, int>> layers; // [begin, end) of a piece, as Task holds them; {0, 0}: Lnone
  std::optional<int> peer_stage;             // ->s3 (SEND) or <-s2 (RECV)
  std::string group;                         // "tp0", "dp4"
  std::string size;                          // as format_bytes prints it: "24MiB"
  std::string ratio;                         // a codec's, as the Program's Work names it: "4"
  int count = 1;
  int occurrence = 1;
  bool operator==(const TaskKey&) const = default;
};

// The keys of a rank's tasks, in its list order.
std::vector<TaskKey> task_keys(const Program& program, int rank);

// The short forms of a rank's tasks, in its list order.
std::vector<std::string> short_forms(const Program& program, int rank);

std::string to_string(const TaskKey& key);

// Reads a short form; throws std::invalid_argument naming the part of the text it cannot read.
TaskKey parse_task_key(std::string_view short_form);

// The id of the task of `rank` whose short form is `short_form`; throws
// std::invalid_argument when the text cannot be read or no task has it.
int find_task(const Program& program, int rank, std::string_view short_form);

}  // namespace simtrain
