#pragma once
// How often to checkpoint: the optimum of Young (1974) and Daly (2006) for a
// checkpoint that takes `checkpoint_seconds` and failures every `mtbf_seconds`
// on average (see tests/validation/checkpointing.json), and the choice a
// training run makes between it and what the scenario configures.
#include <cstdint>
#include <limits>
#include <string>

#include "sim/scenario/run_config.hpp"

namespace simtrain {

double young_interval_seconds(double checkpoint_seconds, double mtbf_seconds);
// Compute time between checkpoints; mtbf itself when the checkpoint takes over 2 mtbf.
double daly_interval_seconds(double checkpoint_seconds, double mtbf_seconds);

// What a save costs the training, for the optimum: the part that stops it,
// the steps its background copies slow (PersistInterference), and how long
// those copies take: a save starts only once the one before is everywhere
// (PyTorch DCP's async_save and Megatron's --async-save finish the previous
// save first), so the interval is at least that.
struct SaveCost {
  double blocking_seconds = 0;
  double slowdown_seconds = 0;
  double background_seconds = 0;
};

// Steps between checkpoints for one checkpoint after the last step, until the steps are known.
constexpr int64_t checkpoint_at_the_end = std::numeric_limits<int64_t>::max();

struct CheckpointInterval {
  int64_t every_steps = 0;  // 0: never; checkpoint_at_the_end: once, after the last step
  std::string rule;         // how it was chosen, for the report
};

// As configured (checkpoint.every_steps or every_minutes), else Daly's
// optimum for the failures that stop the job (`stop_mtbf_seconds`; 0: none)
// with a save costing its blocking part and its slowed steps (an async
// save's optimum is thus shorter than a sync one's), no shorter than its
// background copies; without such random failures, once at the end if a
// scheduled one stops the job, else never.
CheckpointInterval choose_checkpoint_interval(const CheckpointConfig& config, double step_seconds, const SaveCost& save,
                                              double stop_mtbf_seconds, bool scheduled_stops);

}  // namespace simtrain
