#pragma once
// Pseudo-random contents for the buffers the profiler times kernels on
// (values do not change a kernel's time, but NaNs and denormals could).
#include <cstdint>

#include <cuda_runtime.h>

namespace simtrain::cuda {

// Uniform in [low, high); T is float, __nv_bfloat16, __half or __nv_fp8_e4m3.
template <typename T>
void fill_uniform(T* data, int64_t n, float low, float high, uint64_t seed, cudaStream_t stream);

// Uniform integers in [0, range).
void fill_indices(int* data, int64_t n, int range, uint64_t seed, cudaStream_t stream);

}  // namespace simtrain::cuda
