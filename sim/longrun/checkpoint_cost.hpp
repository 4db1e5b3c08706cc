#pragma once
// What one checkpoint costs a training run: every rank's shard
// (checkpoint_bytes_per_rank), written to the checkpoint storage all at once
// and read back from it on a restart (storage_transfer_seconds, with the
// storage of the scenario's checkpoint section).
#include "sim/model/workload.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct CheckpointCost {
  double bytes = 0;  // the whole checkpoint
  double write_seconds = 0;
  double read_seconds = 0;
};

CheckpointCost checkpoint_cost(const Scenario& scenario, const Workload& workload, const Program& program);

}  // namespace simtrain
