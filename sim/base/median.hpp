#pragma once
// The median of a sample: the middle value, or the mean of the two middle
// values of an even count; 0 for an empty sample.
#include <algorithm>
#include <vector>

namespace simtrain {

inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t half = values.size() / 2;
  return values.size() % 2 ? values[half] : (values[half - 1] + values[half]) / 2;
}

}  // namespace simtrain
