#include "timing.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace simtrain {

namespace {

double percentile(const std::vector<double>& sorted, double fraction) {
  const double position = fraction * double(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - double(below)) * (sorted[above] - sorted[below]);
}

}  // namespace

TimingSummary summarize(std::vector<double> seconds) {
  if (seconds.empty()) throw std::invalid_argument("no timings to summarize");
  std::sort(seconds.begin(), seconds.end());
  return {percentile(seconds, 0.5), percentile(seconds, 0.1), percentile(seconds, 0.9), int64_t(seconds.size())};
}

int64_t repetitions_for(double estimate_seconds) {
  if (!(estimate_seconds > 0)) return kMaxRepetitions;
  const double wanted = std::ceil(kTargetSeconds / estimate_seconds);
  return std::clamp(wanted < double(kMaxRepetitions) ? int64_t(wanted) : kMaxRepetitions, kMinRepetitions,
                    kMaxRepetitions);
}

}  // namespace simtrain
