#include "sim/longrun/checkpoint_interval.hpp"

#include <cmath>

namespace simtrain {

double young_interval_seconds(double checkpoint_seconds, double mtbf_seconds) {
  return std::sqrt(2 * checkpoint_seconds * mtbf_seconds);
}

double daly_interval_seconds(double checkpoint_seconds, double mtbf_seconds) {
  if (checkpoint_seconds >= 2 * mtbf_seconds) return mtbf_seconds;
  const double ratio = checkpoint_seconds / (2 * mtbf_seconds);
  return young_interval_seconds(checkpoint_seconds, mtbf_seconds) * (1 + std::sqrt(ratio) / 3 + ratio / 9) -
         checkpoint_seconds;
}

}  // namespace simtrain
