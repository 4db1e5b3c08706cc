#include "sim/longrun/checkpoint_interval.hpp"

#include <algorithm>
#include <cmath>

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

// Whole steps in `seconds` of training, at least one.
int64_t steps_in(double seconds, double step_seconds) {
  return std::max<int64_t>(1, std::llround(std::min(seconds / step_seconds, 1e18)));
}

}  // namespace

double young_interval_seconds(double checkpoint_seconds, double mtbf_seconds) {
  return std::sqrt(2 * checkpoint_seconds * mtbf_seconds);
}

double daly_interval_seconds(double checkpoint_seconds, double mtbf_seconds) {
  if (checkpoint_seconds >= 2 * mtbf_seconds) return mtbf_seconds;
  const double ratio = checkpoint_seconds / (2 * mtbf_seconds);
  return young_interval_seconds(checkpoint_seconds, mtbf_seconds) * (1 + std::sqrt(ratio) / 3 + ratio / 9) -
         checkpoint_seconds;
}

CheckpointInterval choose_checkpoint_interval(const CheckpointConfig& config, double step_seconds,
                                              double write_seconds, double stop_mtbf_seconds, bool scheduled_stops) {
  if (config.every_steps > 0)
    return {config.every_steps, "every " + with_commas(double(config.every_steps)) + " steps (checkpoint.every_steps)"};
  if (config.every_minutes > 0)
    return {steps_in(config.every_minutes * 60, step_seconds),
            format("every %g minutes (checkpoint.every_minutes)", config.every_minutes)};
  if (stop_mtbf_seconds > 0) {
    const double interval = daly_interval_seconds(write_seconds, stop_mtbf_seconds);
    return {steps_in(interval, step_seconds),
            "Daly's optimum: " + with_commas(interval / 60, 1) + " min of training between checkpoints (write " +
                with_commas(write_seconds, 1) + " s, MTBF " + with_commas(stop_mtbf_seconds / 3600, 2) + " h)"};
  }
  if (scheduled_stops) return {checkpoint_at_the_end, "only scheduled failures: one checkpoint at the end"};
  return {0, "no failure can stop the job"};
}

}  // namespace simtrain
