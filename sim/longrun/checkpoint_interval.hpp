#pragma once
// How often to checkpoint: the optimum of Young (1974) and Daly (2006) for a
// checkpoint that takes `checkpoint_seconds` and failures every `mtbf_seconds`
// on average (see tests/validation/checkpointing.json).
namespace simtrain {

double young_interval_seconds(double checkpoint_seconds, double mtbf_seconds);
// Compute time between checkpoints; mtbf itself when the checkpoint takes over 2 mtbf.
double daly_interval_seconds(double checkpoint_seconds, double mtbf_seconds);

}  // namespace simtrain
