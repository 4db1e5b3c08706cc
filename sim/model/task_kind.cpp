#include "sim/model/task_kind.hpp"

namespace simtrain {

std::string to_string(TaskKind kind) {
  static const char* names[] = {"F", "B", "W", "R", "OPT", "SEND", "RECV", "ALLREDUCE", "REDUCESCATTER",
                                "ALLGATHER", "COMPRESS", "DECOMPRESS", "ALLTOALL"};
  return names[static_cast<int>(kind)];
}

bool is_compute(TaskKind kind) {
  return kind == TaskKind::F || kind == TaskKind::B || kind == TaskKind::W || kind == TaskKind::R ||
         kind == TaskKind::OPT || kind == TaskKind::COMPRESS || kind == TaskKind::DECOMPRESS;
}

bool is_model_pass(TaskKind kind) {
  return kind == TaskKind::F || kind == TaskKind::B || kind == TaskKind::W || kind == TaskKind::R;
}

bool is_collective(TaskKind kind) {
  return kind == TaskKind::ALLREDUCE || kind == TaskKind::REDUCESCATTER || kind == TaskKind::ALLGATHER ||
         kind == TaskKind::ALLTOALL;
}

}  // namespace simtrain
