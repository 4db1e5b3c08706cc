#pragma once
// MLP activations, element by element, bf16 or fp16 in and out, fp32 math:
// GELU (tanh approximation) and SwiGLU (silu(gate) * up; gate and up are two
// tensors of n elements, the halves of the fused fc1 output).
#include <cstdint>

#include <cuda_runtime.h>

namespace simtrain::cuda {

template <typename T>
void gelu_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void gelu_backward(const T* dy, const T* x, T* dx, int64_t n, cudaStream_t stream);

template <typename T>
void swiglu_forward(const T* gate, const T* up, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void swiglu_backward(const T* dy, const T* gate, const T* up, T* dgate, T* dup, int64_t n, cudaStream_t stream);

}  // namespace simtrain::cuda
