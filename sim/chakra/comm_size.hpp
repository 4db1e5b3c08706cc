#pragma once
// A collective's comm_size as Chakra's consumers read it, and simtrain's
// bytes (what each rank holds, as nccl-tests count it: Task::bytes) from it.
//
// Chakra's schema (mlcommons/chakra 21585d8, schema/protobuf/et_def.proto)
// does not define comm_size; its PyTorch converter writes the sum of the
// collective kernel's input tensors (src/converter/pytorch_node.py:212-232,
// pytorch_converter.py:247), and ASTRA-sim (astra-sim/astra-sim 8ee4478)
// hands it unchanged to the collective (astra-sim/workload/Workload.cc:340-370,
// astra-sim/system/Sys.cc:750-768), whose algorithm reads it per kind
// (astraccl/native_collectives/collective_algorithm/Ring.cc:70-88, which
// AllToAll.cc:17 inherits; HalvingDoubling.cc:54-72 alike):
// - ALL_REDUCE: the buffer (final size = data_size);
// - REDUCE_SCATTER: the input, the whole buffer (final = data_size / n);
// - ALL_TO_ALL: each rank's send buffer (messages of data_size / n);
// - ALL_GATHER: each rank's input, its shard (final = data_size * n).
// Only the all-gather differs from simtrain's bytes, which hold its gathered output.
#include <cmath>
#include <cstdint>

#include "sim/model/task_kind.hpp"

namespace simtrain {

inline int64_t chakra_comm_size(TaskKind kind, double bytes, int group_size) {
  return std::llround(kind == TaskKind::ALLGATHER ? bytes / group_size : bytes);
}

inline double bytes_of_comm_size(TaskKind kind, int64_t comm_size, int group_size) {
  return static_cast<double>(comm_size) * (kind == TaskKind::ALLGATHER ? group_size : 1);
}

}  // namespace simtrain
