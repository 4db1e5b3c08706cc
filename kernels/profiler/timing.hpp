#pragma once
// How the profiler times a kernel, and the summary it keeps. Plain C++.
#include <cstdint>
#include <vector>

namespace simtrain {

inline constexpr int kWarmupRuns = 3;
inline constexpr int64_t kMinRepetitions = 10;
inline constexpr int64_t kMaxRepetitions = 200;
inline constexpr double kTargetSeconds = 0.2;  // of timed runs per kernel, within the bounds above

struct TimingSummary {
  double median_seconds = 0;
  double p10_seconds = 0;
  double p90_seconds = 0;
  int64_t repetitions = 0;
};

// Percentiles by linear interpolation between the sorted samples.
TimingSummary summarize(std::vector<double> seconds);

// Repetitions for a kernel that takes about `estimate_seconds`.
int64_t repetitions_for(double estimate_seconds);

}  // namespace simtrain
