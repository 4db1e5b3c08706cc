#pragma once
// The stand-in for memory-bound ops without a kernel of their own (dropout,
// bias-add, residual add, the unfused softmax, gradient accumulation): reads
// half of an op's bytes and writes the other half, in 16-byte vectors.
#include <cstdint>

#include <cuda_runtime.h>

namespace simtrain::cuda {

// in and out hold n_vectors float4 each; out = in * scale.
void stream_bytes(const float4* in, float4* out, int64_t n_vectors, float scale, cudaStream_t stream);

// How many float4 vectors each side needs so that reading and writing moves `bytes`.
int64_t stream_vectors(int64_t bytes);

}  // namespace simtrain::cuda
