#pragma once
// Checkpoints of a live run (checkpoint.hpp), every rank doing its part:
// each writes or verifies its own shard, rank 0 the manifest. The figures
// measured are what the simulator's storage model takes
// (checkpoint.storage_write_GBps, storage_read_GBps).
#include <string>

#include "process_world.hpp"
#include "sim/model/workload.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct CheckpointFigures {
  int64_t step = 0;
  double bytes = 0;            // all shards
  double slowest_seconds = 0;  // the slowest rank's write or read
  double bytes_per_second() const { return slowest_seconds > 0 ? bytes / slowest_seconds : 0; }
};

// Verifies the checkpoint in `dir` for this scenario; throws InputError
// naming --resume and what is wrong (on every rank alike).
CheckpointFigures resume_checkpoint(ProcessWorld& world, const std::string& dir, const Scenario& scenario);

// Writes step `step`'s checkpoint to `dir`: every rank's shard of the bytes
// the simulator's checkpoint model gives it, then the manifest. Throws
// LiveError (on every rank alike) if a rank could not write its shard.
CheckpointFigures write_live_checkpoint(ProcessWorld& world, const std::string& dir, const Scenario& scenario,
                                        const Workload& workload, const Program& program, int64_t step);

}  // namespace simtrain
