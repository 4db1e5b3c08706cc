#pragma once
// Reproducible kernel inputs: n values drawn uniformly from [low, high) by a
// generator seeded with `seed`, shared by the CPU and GPU kernel tests.
#include <random>
#include <vector>

namespace simtrain::kernel_tests {

inline std::vector<float> random_values(size_t n, unsigned seed, float low = -1, float high = 1) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(n);
  for (float& v : values) v = uniform(generator);
  return values;
}

}  // namespace simtrain::kernel_tests
