#pragma once
// Fused AdamW step: fp32 master weights, moments (m, v) and gradients updated
// in place, and the weights the next step computes with written as bf16 or
// fp16.
#include <cstdint>

#include <cuda_runtime.h>

#include "kernel_math.hpp"

namespace simtrain::cuda {

template <typename T>
void adamw(float* param, float* m, float* v, const float* grad, T* weight, int64_t n, const math::AdamWConfig& config,
           cudaStream_t stream);

}  // namespace simtrain::cuda
