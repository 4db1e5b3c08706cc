#include "norms.hpp"

#include <cmath>

namespace simtrain::reference {

namespace {

// LayerNorm is RMSNorm of the centered row, plus a bias.
NormForward norm_forward(const std::vector<float>& x, const std::vector<float>& gamma, const std::vector<float>* beta,
                         int64_t rows, int64_t cols) {
  NormForward result{std::vector<float>(rows * cols), std::vector<float>(rows), std::vector<float>(rows)};
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &x[r * cols];
    double mean = 0, square = 0;
    if (beta) {
      for (int64_t c = 0; c < cols; ++c) mean += row[c];
      mean /= cols;
    }
    for (int64_t c = 0; c < cols; ++c) square += (row[c] - mean) * (row[c] - mean);
    const double rstd = 1.0 / std::sqrt(square / cols + kNormEpsilon);
    for (int64_t c = 0; c < cols; ++c)
      result.y[r * cols + c] = static_cast<float>((row[c] - mean) * rstd * gamma[c] + (beta ? (*beta)[c] : 0.0));
    result.mean[r] = static_cast<float>(mean);
    result.rstd[r] = static_cast<float>(rstd);
  }
  return result;
}

// dx = rstd * (g - [centered] mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
NormGradients norm_backward(const std::vector<float>& dy, const std::vector<float>& x, const std::vector<float>& gamma,
                            const NormForward& saved, bool centered, int64_t rows, int64_t cols) {
  NormGradients result{std::vector<float>(rows * cols), std::vector<float>(cols), std::vector<float>(cols)};
  std::vector<double> dgamma(cols), dbeta(cols);
  for (int64_t r = 0; r < rows; ++r) {
    double mean_g = 0, mean_gx = 0;
    auto xhat = [&](int64_t c) { return (double(x[r * cols + c]) - saved.mean[r]) * saved.rstd[r]; };
    for (int64_t c = 0; c < cols; ++c) {
      const double g = double(dy[r * cols + c]) * gamma[c];
      mean_g += g / cols;
      mean_gx += g * xhat(c) / cols;
      dgamma[c] += dy[r * cols + c] * xhat(c);
      if (centered) dbeta[c] += dy[r * cols + c];
    }
    for (int64_t c = 0; c < cols; ++c) {
      const double g = double(dy[r * cols + c]) * gamma[c];
      result.dx[r * cols + c] = static_cast<float>(saved.rstd[r] * (g - (centered ? mean_g : 0) - xhat(c) * mean_gx));
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    result.dgamma[c] = static_cast<float>(dgamma[c]);
    result.dbeta[c] = static_cast<float>(dbeta[c]);
  }
  return result;
}

}  // namespace

NormForward layernorm_forward(const std::vector<float>& x, const std::vector<float>& gamma,
                              const std::vector<float>& beta, int64_t rows, int64_t cols) {
  return norm_forward(x, gamma, &beta, rows, cols);
}

NormGradients layernorm_backward(const std::vector<float>& dy, const std::vector<float>& x,
                                 const std::vector<float>& gamma, const NormForward& saved, int64_t rows, int64_t cols) {
  return norm_backward(dy, x, gamma, saved, true, rows, cols);
}

NormForward rmsnorm_forward(const std::vector<float>& x, const std::vector<float>& gamma, int64_t rows, int64_t cols) {
  return norm_forward(x, gamma, nullptr, rows, cols);
}

NormGradients rmsnorm_backward(const std::vector<float>& dy, const std::vector<float>& x,
                               const std::vector<float>& gamma, const NormForward& saved, int64_t rows, int64_t cols) {
  return norm_backward(dy, x, gamma, saved, false, rows, cols);
}

}  // namespace simtrain::reference
