#pragma once
// Fused causal attention of our own, in the style of FlashAttention-2: tiles
// of 32 queries x 32 keys in shared memory, online softmax, fp32
// accumulation, bf16 or fp16 in and out; the backward recomputes the
// probabilities from the forward's log-sum-exp. Plain CUDA cores (no tensor
// cores): simple and checked against the CPU reference, not tuned (README).
// head_dim at most kMaxHeadDim; keys and values have as many heads as queries.
#include <cuda_runtime.h>

#include "attention_shape.hpp"

namespace simtrain::cuda {

inline constexpr int kMaxHeadDim = 128;

// Throws std::invalid_argument for a head_dim the kernels do not support.
void check_attention_shape(const AttentionShape& shape);

// out = softmax(q k^T / sqrt(head_dim), causal) v; lse[row] = ln sum_j exp(score_j) (fp32).
template <typename T>
void attention_forward(const T* q, const T* k, const T* v, T* out, float* lse, const AttentionShape& shape,
                       cudaStream_t stream);

// fp32 scratch the backward needs: dq accumulator and one value per row.
size_t attention_backward_workspace_bytes(const AttentionShape& shape);

template <typename T>
void attention_backward(const T* q, const T* k, const T* v, const T* out, const T* dout, const float* lse, T* dq,
                        T* dk, T* dv, void* workspace, const AttentionShape& shape, cudaStream_t stream);

}  // namespace simtrain::cuda
