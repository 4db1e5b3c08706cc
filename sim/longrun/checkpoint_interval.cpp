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

CheckpointInterval choose_checkpoint_interval(const CheckpointConfig& config, double step_seconds, const SaveCost& save,
                                              double stop_mtbf_seconds, bool scheduled_stops) {
  if (config.every_steps > 0)
    return {config.every_steps, "every " + with_commas(double(config.every_steps)) + " steps (checkpoint.every_steps)"};
  if (config.every_minutes > 0)
    return {steps_in(config.every_minutes * 60, step_seconds),
            format("every %g minutes (checkpoint.every_minutes)", config.every_minutes)};
  if (stop_mtbf_seconds > 0) {
    const double cost = save.blocking_seconds + save.slowdown_seconds;
    const double optimum = daly_interval_seconds(cost, stop_mtbf_seconds);
    const double interval = std::max(optimum, save.background_seconds);
    const std::string mtbf = "MTBF " + with_commas(stop_mtbf_seconds / 3600, 2) + " h";
    const std::string costs =
        save.slowdown_seconds == 0 && save.background_seconds == 0
            ? "write " + with_commas(save.blocking_seconds, 1) + " s, " + mtbf
            : "a save costs " + with_commas(cost, 1) + " s: blocking " + with_commas(save.blocking_seconds, 1) +
                  " s, slowed steps " + with_commas(save.slowdown_seconds, 1) + " s; " + mtbf;
    return {steps_in(interval, step_seconds),
            "Daly's optimum: " + with_commas(interval / 60, 1) + " min of training between checkpoints (" + costs + ")" +
                (interval > optimum ? ", the background copies' " + with_commas(save.background_seconds, 1) +
                                          " s: one save in flight at a time"
                                    : "")};
  }
  if (scheduled_stops) return {checkpoint_at_the_end, "only scheduled failures: one checkpoint at the end"};
  return {0, "no failure can stop the job"};
}

}  // namespace simtrain
