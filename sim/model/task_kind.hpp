#pragma once
// What a rank does in a training step: the one vocabulary of the workload's
// tensor-parallel collectives, the pipeline schedules, the network's
// collective plans and the Program's tasks, as PyTorch's pipelining schedules
// name their actions (F, B, W, SEND_F ...).
#include <cstdint>
#include <string>

namespace simtrain {

// F forward; B backward (input gradients, or the whole backward when not
// split); W weight gradients; R recomputation; OPT optimizer step;
// COMPRESS/DECOMPRESS gradient codecs; the rest move bytes. ALLTOALL
// (expert parallelism's token dispatch and combine, after each pass of an
// MoE layer) comes last so that every other kind keeps its number
// (program_hash and traces carry them).
enum class TaskKind : uint8_t {
  F, B, W, R, OPT, SEND, RECV, ALLREDUCE, REDUCESCATTER, ALLGATHER, COMPRESS, DECOMPRESS, ALLTOALL
};

std::string to_string(TaskKind kind);  // "F", "ALLREDUCE", ...
bool is_compute(TaskKind kind);
bool is_model_pass(TaskKind kind);  // F, B, W, R: the compute that runs model units (not OPT or a codec)
bool is_collective(TaskKind kind);

}  // namespace simtrain
