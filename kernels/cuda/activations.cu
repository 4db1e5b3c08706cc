#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "activations.hpp"
#include "cuda_check.hpp"
#include "device_math.cuh"
#include "kernel_math.hpp"

namespace simtrain::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void gelu_forward_kernel(const T* x, T* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = from_float<T>(math::gelu(to_float(x[i])));
}

template <typename T>
__global__ void gelu_backward_kernel(const T* dy, const T* x, T* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    dx[i] = from_float<T>(to_float(dy[i]) * math::gelu_grad(to_float(x[i])));
}

template <typename T>
__global__ void swiglu_forward_kernel(const T* gate, const T* up, T* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    y[i] = from_float<T>(math::silu(to_float(gate[i])) * to_float(up[i]));
}

template <typename T>
__global__ void swiglu_backward_kernel(const T* dy, const T* gate, const T* up, T* dgate, T* dup, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float g = to_float(gate[i]), d = to_float(dy[i]);
    dgate[i] = from_float<T>(d * to_float(up[i]) * math::silu_grad(g));
    dup[i] = from_float<T>(d * math::silu(g));
  }
}

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
  gelu_forward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, y, n);
  check_launch("gelu_forward_kernel");
}

template <typename T>
void gelu_backward(const T* dy, const T* x, T* dx, int64_t n, cudaStream_t stream) {
  gelu_backward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(dy, x, dx, n);
  check_launch("gelu_backward_kernel");
}

template <typename T>
void swiglu_forward(const T* gate, const T* up, T* y, int64_t n, cudaStream_t stream) {
  swiglu_forward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(gate, up, y, n);
  check_launch("swiglu_forward_kernel");
}

template <typename T>
void swiglu_backward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, int64_t n, cudaStream_t stream) {
  swiglu_backward_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(dy, gate, up, dgate, dup, n);
  check_launch("swiglu_backward_kernel");
}

#define SIMTRAIN_INSTANTIATE(T)                                                                 \
  template void gelu_forward<T>(const T*, T*, int64_t, cudaStream_t);                           \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t, cudaStream_t);                \
  template void swiglu_forward<T>(const T*, const T*, T*, int64_t, cudaStream_t);               \
  template void swiglu_backward<T>(const T*, const T*, const T*, T*, T*, int64_t, cudaStream_t);
SIMTRAIN_INSTANTIATE(__nv_bfloat16)
SIMTRAIN_INSTANTIATE(__half)
#undef SIMTRAIN_INSTANTIATE

}  // namespace simtrain::cuda
