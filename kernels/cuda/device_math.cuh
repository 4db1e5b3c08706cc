#pragma once
// Device helpers shared by the kernels: conversions between the 16-bit
// element types and fp32, and warp- and block-wide reductions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace simtrain::cuda {

__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__half x) { return __half2float(x); }

template <typename T>
__device__ T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) { return x; }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <>
__device__ inline __half from_float<__half>(float x) { return __float2half(x); }

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename Op>
__device__ inline float warp_reduce(float value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Every thread of the block gets the result; blockDim.x must be a multiple of
// 32. `identity` fills the slots of absent warps.
template <typename Op>
__device__ inline float block_reduce(float value, Op op, float identity) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_reduce(value, op);
  __syncthreads();  // a previous call may still be reading `partial`
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  return warp_reduce(lane < int(blockDim.x / 32) ? partial[lane] : identity, op);
}

__device__ inline float block_sum(float value) { return block_reduce(value, Sum{}, 0.f); }
__device__ inline float block_max(float value) { return block_reduce(value, Max{}, -INFINITY); }

// Grid-stride loop bounds: for (i = first_index(); i < n; i += grid_stride()).
__device__ inline int64_t first_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, no more.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace simtrain::cuda
