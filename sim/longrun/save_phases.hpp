#pragma once
// One save, phase by phase, for a checkpoint mode (CheckpointConfig::mode):
// what stops training, which copies follow in the background and when each
// is readable, what a restore from each reads; incremental saves' sizes.
#include <cstdint>
#include <vector>

#include "sim/longrun/checkpoint_cost.hpp"
#include "sim/longrun/training_run.hpp"
#include "sim/scenario/run_config.hpp"

namespace simtrain {

// The fraction of a checkpoint's bytes that `steps` steps change, each
// changing `per_step` of them anywhere at random: 1 - (1 - per_step)^steps.
double changed_fraction(double per_step, int64_t steps);

struct SavePhases {
  double save_fraction = 1;      // a save's mean bytes over a full one's (incremental saves)
  double restore_fraction = 1;   // a restore's mean reads over a full checkpoint (the full and the increments since)
  double blocking_seconds = 0;   // training stops
  // Background copies over the NICs, beside the steps, per save on average:
  // to peer nodes' host memory, then to the shared storage.
  double peer_seconds_per_save = 0;
  double shared_seconds_per_save = 0;
  std::vector<TierCopy> copies;  // nearest first
  double background_seconds() const;  // until the last copy is readable
};

// `steps_between_saves` sizes incremental saves; the stretches (at least 1)
// how much longer the background copies to the shared storage and to peers
// take beside the step's traffic (persist_interference.hpp).
SavePhases save_phases(const CheckpointConfig& config, const CheckpointCost& cost, int64_t steps_between_saves,
                       double shared_stretch = 1, double peer_stretch = 1);

}  // namespace simtrain
