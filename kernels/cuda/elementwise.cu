#include "cuda_check.hpp"
#include "device_math.cuh"
#include "elementwise.hpp"

namespace simtrain::cuda {

namespace {

__global__ void stream_bytes_kernel(const float4* in, float4* out, int64_t n, float scale) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float4 x = in[i];
    out[i] = make_float4(x.x * scale, x.y * scale, x.z * scale, x.w * scale);
  }
}

}  // namespace

void stream_bytes(const float4* in, float4* out, int64_t n_vectors, float scale, cudaStream_t stream) {
  stream_bytes_kernel<<<grid_for(n_vectors, 256), 256, 0, stream>>>(in, out, n_vectors, scale);
  check_launch("stream_bytes_kernel");
}

int64_t stream_vectors(int64_t bytes) {
  const int64_t half = (bytes + 1) / 2;
  return (half + int64_t(sizeof(float4)) - 1) / int64_t(sizeof(float4));
}

}  // namespace simtrain::cuda
