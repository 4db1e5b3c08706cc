#pragma once
// CPU references of LayerNorm and RMSNorm over the rows of a [rows][cols]
// tensor, forward and backward, in double.
#include <cstdint>
#include <vector>

namespace simtrain::reference {

inline constexpr float kNormEpsilon = 1e-5f;

struct NormForward {
  std::vector<float> y;
  std::vector<float> mean;  // per row; all zero for RMSNorm
  std::vector<float> rstd;  // per row: 1 / sqrt(variance (RMSNorm: mean square) + eps)
};

struct NormGradients {
  std::vector<float> dx, dgamma, dbeta;  // dbeta all zero for RMSNorm
};

// LayerNorm: y = (x - mean) * rstd * gamma + beta.
NormForward layernorm_forward(const std::vector<float>& x, const std::vector<float>& gamma,
                              const std::vector<float>& beta, int64_t rows, int64_t cols);
NormGradients layernorm_backward(const std::vector<float>& dy, const std::vector<float>& x,
                                 const std::vector<float>& gamma, const NormForward& saved, int64_t rows, int64_t cols);

// RMSNorm: y = x * rstd * gamma.
NormForward rmsnorm_forward(const std::vector<float>& x, const std::vector<float>& gamma, int64_t rows, int64_t cols);
NormGradients rmsnorm_backward(const std::vector<float>& dy, const std::vector<float>& x,
                               const std::vector<float>& gamma, const NormForward& saved, int64_t rows, int64_t cols);

}  // namespace simtrain::reference
