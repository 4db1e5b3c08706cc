// Task names, formatted from the fields as the lowering passes lay the tasks
// out; program_hash and the trace compare them, so the text stays put.
#include "sim/program/program.hpp"

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

// "s3 F mb7", and " L4-7" for part of a stage's layers.
// Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "s" + std::string.
std::string compute_name(const Task& t) {
  std::string name = std::string("s").append(std::to_string(t.stage)).append(" ").append(to_string(t.kind));
  name.append(" mb").append(std::to_string(t.microbatch));
  if (t.part_of_stage)
    name.append(" L").append(std::to_string(t.layer_begin)).append("-").append(std::to_string(t.layer_end - 1));
  return name;
}

// "send act s2->s3 mb7 24MiB", "recv grad s3->s2 mb7": activations flow to the
// next stage, gradients to the one before.
std::string transfer_name(const Task& t) {
  const bool send = t.kind == TaskKind::SEND;
  const int downstream = t.backward ? -1 : 1;
  const int from_stage = send ? t.stage : t.stage - downstream, to_stage = send ? t.stage + downstream : t.stage;
  std::string name = std::string(send ? "send" : "recv").append(t.backward ? " grad" : " act");
  name.append(" s").append(std::to_string(from_stage)).append("->s").append(std::to_string(to_stage));
  name.append(" mb").append(std::to_string(t.microbatch));
  if (send) name.append(" ").append(format_bytes(t.bytes));
  return name;
}

// "allreduce tp5 24MiB x9", "allreduce dp3 1GiB ring", "push ps2 1GiB" (through parameter servers),
// "allgather cp4 kv p2p 8MiB x8" (context parallelism's K/V; p2p: ring attention's, beside the pass),
// "alltoall cp4 heads 8MiB x8" (a2a's exchange of the sequence split for the heads').
std::string collective_name(const Program& program, const Task& t) {
  const Group& group = program.groups[t.group];
  std::string name =
      group.servers == 0 ? to_lower(to_string(t.kind)) : t.kind == TaskKind::REDUCESCATTER ? "push" : "pull";
  name.append(" ").append(group.name);
  if (group.dim == CommDim::cp) {
    name.append(t.kind == TaskKind::ALLTOALL ? " heads" : t.kind == TaskKind::REDUCESCATTER ? " dkv" : " kv");
    if (t.stream == Stream::tp_overlap) name.append(" p2p");
  }
  name.append(" ").append(format_bytes(t.bytes));
  if (t.kind == TaskKind::ALLREDUCE && group.allreduce_algorithm)
    name.append(" ").append(to_string(*group.allreduce_algorithm));
  if (t.count > 1) name.append(" x").append(std::to_string(t.count));
  return name;
}

}  // namespace

std::string task_name(const Program& program, const Task& task) {
  if (!program.recorded_names.empty()) return program.recorded_names[task.id];
  if (is_model_pass(task.kind)) return compute_name(task);
  switch (task.kind) {
    case TaskKind::SEND:
    case TaskKind::RECV: return transfer_name(task);
    case TaskKind::OPT: return "optimizer";
    // A codec's Work is named as its task ("compress 24MiB /4"): it keeps the gradient size and ratio.
    case TaskKind::COMPRESS:
    case TaskKind::DECOMPRESS: return program.works[task.work].name;
    default: return collective_name(program, task);
  }
}

}  // namespace simtrain
