#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda_check.hpp"
#include "device_math.cuh"
#include "norms.hpp"

namespace simtrain::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kRowsPerChunk = 64;  // rows one block sums for the parameter gradients, at least
constexpr int64_t kMaxChunks = 65535;  // gridDim.y

// LayerNorm is RMSNorm of the centered row plus a bias: kCentered selects.
// beta and mean are unused (may be null) when not centered.
template <typename T, bool kCentered>
__global__ void __launch_bounds__(kThreads)
    norm_forward_kernel(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd, int64_t cols) {
  const int64_t row = blockIdx.x;
  const T* in = x + row * cols;
  T* out = y + row * cols;
  float mu = 0;
  if (kCentered) {
    float sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += to_float(in[c]);
    mu = block_sum(sum) / cols;
  }
  float square = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = to_float(in[c]) - mu;
    square += d * d;
  }
  const float r = rsqrtf(block_sum(square) / cols + kNormEpsilon);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float value = (to_float(in[c]) - mu) * r * to_float(gamma[c]);
    out[c] = from_float<T>(kCentered ? value + to_float(beta[c]) : value);
  }
  if (threadIdx.x == 0) {
    if (kCentered) mean[row] = mu;
    rstd[row] = r;
  }
}

// dx = rstd * (g - [centered] mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
template <typename T, bool kCentered>
__global__ void __launch_bounds__(kThreads)
    norm_backward_input_kernel(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                               int64_t cols) {
  const int64_t row = blockIdx.x;
  const float mu = kCentered ? mean[row] : 0.f, r = rstd[row];
  float sum_g = 0, sum_gx = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = to_float(dy[row * cols + c]) * to_float(gamma[c]);
    sum_g += g;
    sum_gx += g * (to_float(x[row * cols + c]) - mu) * r;
  }
  const float mean_g = kCentered ? block_sum(sum_g) / cols : 0.f;
  const float mean_gx = block_sum(sum_gx) / cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = to_float(dy[row * cols + c]) * to_float(gamma[c]);
    const float xhat = (to_float(x[row * cols + c]) - mu) * r;
    dx[row * cols + c] = from_float<T>(r * (g - mean_g - xhat * mean_gx));
  }
}

// Grid: (column blocks, row chunks); one thread per column sums its chunk's rows.
template <typename T, bool kCentered>
__global__ void norm_backward_parameters_kernel(const T* dy, const T* x, const float* mean, const float* rstd,
                                                float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                                                int64_t rows_per_chunk) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const int64_t first = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t last = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
  float sum_gamma = 0, sum_beta = 0;
  for (int64_t row = first; row < last; ++row) {
    const float d = to_float(dy[row * cols + c]);
    sum_gamma += d * (to_float(x[row * cols + c]) - (kCentered ? mean[row] : 0.f)) * rstd[row];
    sum_beta += d;
  }
  atomicAdd(&dgamma[c], sum_gamma);
  if (kCentered) atomicAdd(&dbeta[c], sum_beta);
}

template <typename T, bool kCentered>
void norm_forward(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd, int64_t rows,
                  int64_t cols, cudaStream_t stream) {
  norm_forward_kernel<T, kCentered><<<unsigned(rows), kThreads, 0, stream>>>(x, gamma, beta, y, mean, rstd, cols);
  check_launch("norm_forward_kernel");
}

template <typename T, bool kCentered>
void norm_backward(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx, float* dgamma,
                   float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream) {
  norm_backward_input_kernel<T, kCentered><<<unsigned(rows), kThreads, 0, stream>>>(dy, x, gamma, mean, rstd, dx, cols);
  check_launch("norm_backward_input_kernel");
  check(cudaMemsetAsync(dgamma, 0, sizeof(float) * cols, stream), "cudaMemsetAsync(dgamma)");
  if (kCentered) check(cudaMemsetAsync(dbeta, 0, sizeof(float) * cols, stream), "cudaMemsetAsync(dbeta)");
  const int64_t chunks = std::min((rows + kRowsPerChunk - 1) / kRowsPerChunk, kMaxChunks);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(unsigned((cols + kThreads - 1) / kThreads), unsigned(chunks));
  norm_backward_parameters_kernel<T, kCentered><<<grid, kThreads, 0, stream>>>(dy, x, mean, rstd, dgamma, dbeta, rows,
                                                                                cols, rows_per_chunk);
  check_launch("norm_backward_parameters_kernel");
}

}  // namespace

template <typename T>
void layernorm_forward(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd, int64_t rows,
                       int64_t cols, cudaStream_t stream) {
  norm_forward<T, true>(x, gamma, beta, y, mean, rstd, rows, cols, stream);
}

template <typename T>
void layernorm_backward(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                        float* dgamma, float* dbeta, int64_t rows, int64_t cols, cudaStream_t stream) {
  norm_backward<T, true>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, cols, stream);
}

template <typename T>
void rmsnorm_forward(const T* x, const T* gamma, T* y, float* rstd, int64_t rows, int64_t cols, cudaStream_t stream) {
  norm_forward<T, false>(x, gamma, nullptr, y, nullptr, rstd, rows, cols, stream);
}

template <typename T>
void rmsnorm_backward(const T* dy, const T* x, const T* gamma, const float* rstd, T* dx, float* dgamma, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  norm_backward<T, false>(dy, x, gamma, nullptr, rstd, dx, dgamma, nullptr, rows, cols, stream);
}

#define SIMTRAIN_INSTANTIATE(T)                                                                                      \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, float*, float*, int64_t, int64_t,            \
                                     cudaStream_t);                                                                 \
  template void layernorm_backward<T>(const T*, const T*, const T*, const float*, const float*, T*, float*, float*, \
                                      int64_t, int64_t, cudaStream_t);                                              \
  template void rmsnorm_forward<T>(const T*, const T*, T*, float*, int64_t, int64_t, cudaStream_t);                 \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const float*, T*, float*, int64_t, int64_t,       \
                                    cudaStream_t);
SIMTRAIN_INSTANTIATE(__nv_bfloat16)
SIMTRAIN_INSTANTIATE(__half)
#undef SIMTRAIN_INSTANTIATE

}  // namespace simtrain::cuda
