#include "gemm.hpp"

namespace simtrain::reference {

std::vector<float> gemm(const std::vector<float>& x, const std::vector<float>& w, int64_t m, int64_t n, int64_t k) {
  std::vector<float> y(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += double(x[i * k + p]) * w[j * k + p];
      y[i * n + j] = static_cast<float>(sum);
    }
  return y;
}

}  // namespace simtrain::reference
