#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "adamw.hpp"
#include "cuda_check.hpp"
#include "device_math.cuh"

namespace simtrain::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void adamw_kernel(float* param, float* m, float* v, const float* grad, T* weight, int64_t n,
                             math::AdamWStep step) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float p = param[i], mi = m[i], vi = v[i];
    math::adamw_update(p, mi, vi, grad[i], step);
    param[i] = p;
    m[i] = mi;
    v[i] = vi;
    weight[i] = from_float<T>(p);
  }
}

}  // namespace

template <typename T>
void adamw(float* param, float* m, float* v, const float* grad, T* weight, int64_t n, const math::AdamWConfig& config,
           cudaStream_t stream) {
  adamw_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(param, m, v, grad, weight, n,
                                                                    math::adamw_step(config));
  check_launch("adamw_kernel");
}

template void adamw<__nv_bfloat16>(float*, float*, float*, const float*, __nv_bfloat16*, int64_t,
                                   const math::AdamWConfig&, cudaStream_t);
template void adamw<__half>(float*, float*, float*, const float*, __half*, int64_t, const math::AdamWConfig&,
                            cudaStream_t);

}  // namespace simtrain::cuda
