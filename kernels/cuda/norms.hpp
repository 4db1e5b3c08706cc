#pragma once
// LayerNorm and RMSNorm over the rows of a [rows][cols] tensor, forward and
// backward: bf16 or fp16 data, fp32 statistics and parameter gradients.
// One block per row; the parameter gradients are summed over row chunks.
#include <cstdint>

#include <cuda_runtime.h>

namespace simtrain::cuda {

inline constexpr float kNormEpsilon = 1e-5f;

// y = (x - mean) * rstd * gamma + beta; mean and rstd saved per row (fp32).
template <typename T>
void layernorm_forward(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd, int64_t rows,
                       int64_t cols, cudaStream_t stream);
// dgamma and dbeta (fp32) are overwritten.
template <typename T>
void layernorm_backward(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                        float* dgamma, float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream);

// y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps).
template <typename T>
void rmsnorm_forward(const T* x, const T* gamma, T* y, float* rstd, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void rmsnorm_backward(const T* dy, const T* x, const T* gamma, const float* rstd, T* dx, float* dgamma, int64_t rows,
                      int64_t cols, cudaStream_t stream);

}  // namespace simtrain::cuda
