#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.hpp"
#include "device_math.cuh"
#include "embedding.hpp"

namespace simtrain::cuda {

namespace {

constexpr int kThreads = 256;

// One block per token.
template <typename T>
__global__ void embedding_forward_kernel(const T* table, const int* ids, const T* positions, const int* position_ids,
                                         T* out, int64_t hidden) {
  const int64_t token = blockIdx.x;
  const T* row = table + int64_t(ids[token]) * hidden;
  const T* position = positions ? positions + int64_t(position_ids[token]) * hidden : nullptr;
  for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x)
    out[token * hidden + c] = from_float<T>(to_float(row[c]) + (position ? to_float(position[c]) : 0.f));
}

template <typename T>
__global__ void embedding_backward_kernel(const T* dout, const int* ids, const int* position_ids, float* dtable,
                                          float* dpositions, int64_t hidden) {
  const int64_t token = blockIdx.x;
  float* row = dtable + int64_t(ids[token]) * hidden;
  float* position = dpositions ? dpositions + int64_t(position_ids[token]) * hidden : nullptr;
  for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
    const float d = to_float(dout[token * hidden + c]);
    atomicAdd(&row[c], d);
    if (position) atomicAdd(&position[c], d);
  }
}

}  // namespace

template <typename T>
void embedding_forward(const T* table, const int* ids, const T* positions, const int* position_ids, T* out,
                       int64_t tokens, int64_t hidden, cudaStream_t stream) {
  embedding_forward_kernel<T><<<unsigned(tokens), kThreads, 0, stream>>>(table, ids, positions, position_ids, out,
                                                                         hidden);
  check_launch("embedding_forward_kernel");
}

template <typename T>
void embedding_backward(const T* dout, const int* ids, const int* position_ids, float* dtable, float* dpositions,
                        int64_t tokens, int64_t hidden, cudaStream_t stream) {
  embedding_backward_kernel<T><<<unsigned(tokens), kThreads, 0, stream>>>(dout, ids, position_ids, dtable,
                                                                          dpositions, hidden);
  check_launch("embedding_backward_kernel");
}

#define SIMTRAIN_INSTANTIATE(T)                                                                                  \
  template void embedding_forward<T>(const T*, const int*, const T*, const int*, T*, int64_t, int64_t,         \
                                     cudaStream_t);                                                            \
  template void embedding_backward<T>(const T*, const int*, const int*, float*, float*, int64_t, int64_t,      \
                                      cudaStream_t);
SIMTRAIN_INSTANTIATE(__nv_bfloat16)
SIMTRAIN_INSTANTIATE(__half)
#undef SIMTRAIN_INSTANTIATE

}  // namespace simtrain::cuda
