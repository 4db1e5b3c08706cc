#pragma once
// Softmax cross-entropy over the vocabulary on fp32 logits [rows][vocab], one
// target per row (as one tensor-parallel rank computes it over its share of
// the vocabulary, without the all-reduce of the partial sums).
#include <cstdint>

#include <cuda_runtime.h>

namespace simtrain::cuda {

// loss[row] = lse[row] - logits[row][target[row]]; lse saved for the backward.
void cross_entropy_forward(const float* logits, const int* targets, float* loss, float* lse, int64_t rows,
                           int64_t vocab, cudaStream_t stream);

// dlogits = (softmax(logits) - onehot(target)) * dloss[row].
void cross_entropy_backward(const float* logits, const int* targets, const float* lse, const float* dloss,
                            float* dlogits, int64_t rows, int64_t vocab, cudaStream_t stream);

}  // namespace simtrain::cuda
