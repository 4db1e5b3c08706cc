#include "cross_entropy.hpp"

#include <algorithm>
#include <cmath>

namespace simtrain::reference {

CrossEntropyForward cross_entropy_forward(const std::vector<float>& logits, const std::vector<int>& targets,
                                          int64_t rows, int64_t vocab) {
  CrossEntropyForward result{std::vector<float>(rows), std::vector<float>(rows)};
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &logits[r * vocab];
    const double max = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t c = 0; c < vocab; ++c) sum += std::exp(row[c] - max);
    const double lse = max + std::log(sum);
    result.lse[r] = static_cast<float>(lse);
    result.loss[r] = static_cast<float>(lse - row[targets[r]]);
  }
  return result;
}

std::vector<float> cross_entropy_backward(const std::vector<float>& logits, const std::vector<int>& targets,
                                          const std::vector<float>& lse, const std::vector<float>& dloss,
                                          int64_t rows, int64_t vocab) {
  std::vector<float> dlogits(rows * vocab);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < vocab; ++c) {
      const double softmax = std::exp(double(logits[r * vocab + c]) - lse[r]);
      dlogits[r * vocab + c] = static_cast<float>((softmax - (c == targets[r] ? 1 : 0)) * dloss[r]);
    }
  return dlogits;
}

}  // namespace simtrain::reference
