#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda_check.hpp"
#include "device_math.cuh"
#include "fill.hpp"

namespace simtrain::cuda {

namespace {

// SplitMix64: a good hash of (seed, index).
__device__ inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ inline float unit(uint64_t seed, int64_t i) {
  return float(mix(seed ^ mix(uint64_t(i))) >> 40) * (1.f / float(1 << 24));
}

template <typename T>
__global__ void fill_uniform_kernel(T* data, int64_t n, float low, float high, uint64_t seed) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) data[i] = T(low + (high - low) * unit(seed, i));  // every element type converts from float
}

__global__ void fill_indices_kernel(int* data, int64_t n, int range, uint64_t seed) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) data[i] = int(mix(seed ^ mix(uint64_t(i))) % uint64_t(range));
}

}  // namespace

template <typename T>
void fill_uniform(T* data, int64_t n, float low, float high, uint64_t seed, cudaStream_t stream) {
  fill_uniform_kernel<T><<<grid_for(n, 256), 256, 0, stream>>>(data, n, low, high, seed);
  check_launch("fill_uniform_kernel");
}

void fill_indices(int* data, int64_t n, int range, uint64_t seed, cudaStream_t stream) {
  fill_indices_kernel<<<grid_for(n, 256), 256, 0, stream>>>(data, n, range, seed);
  check_launch("fill_indices_kernel");
}

template void fill_uniform<float>(float*, int64_t, float, float, uint64_t, cudaStream_t);
template void fill_uniform<__nv_bfloat16>(__nv_bfloat16*, int64_t, float, float, uint64_t, cudaStream_t);
template void fill_uniform<__half>(__half*, int64_t, float, float, uint64_t, cudaStream_t);
template void fill_uniform<__nv_fp8_e4m3>(__nv_fp8_e4m3*, int64_t, float, float, uint64_t, cudaStream_t);

}  // namespace simtrain::cuda
