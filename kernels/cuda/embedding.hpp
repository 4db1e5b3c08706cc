#pragma once
// Embedding lookup, out[t] = table[ids[t]] (+ positions[position_ids[t]]), in
// bf16 or fp16, and its backward: dout scatter-added into fp32 table
// gradients with atomics (tokens sharing an id add up).
#include <cstdint>

#include <cuda_runtime.h>

namespace simtrain::cuda {

// positions and position_ids may be null (no learned position table).
template <typename T>
void embedding_forward(const T* table, const int* ids, const T* positions, const int* position_ids, T* out,
                       int64_t tokens, int64_t hidden, cudaStream_t stream);

// Adds into dtable (and dpositions unless null); zero them first for a fresh gradient.
template <typename T>
void embedding_backward(const T* dout, const int* ids, const int* position_ids, float* dtable, float* dpositions,
                        int64_t tokens, int64_t hidden, cudaStream_t stream);

}  // namespace simtrain::cuda
