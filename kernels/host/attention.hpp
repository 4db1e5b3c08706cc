#pragma once
// Causal scaled-dot-product attention of the live host backend (scale
// 1/sqrt(head_dim)), by blocks of GEMMs on OpenBLAS: for each head and each
// block of query rows, the scores against the keys it may see, their softmax,
// and the products with V (forward) or with dO, K and Q (backward, the
// probabilities recomputed from the saved log-sum-exp, as the CUDA kernel
// and reference::attention_backward do). Float GEMMs with double row sums;
// checked against kernels/reference/attention in kernels/tests/test_host_kernels.cpp.
// Layouts as attention_shape.hpp says; outputs are overwritten.
#include "attention_shape.hpp"

namespace simtrain::host {

void attention_forward(const float* q, const float* k, const float* v, float* out, float* lse,
                       const AttentionShape& shape);

void attention_backward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                        const float* lse, float* dq, float* dk, float* dv, const AttentionShape& shape);

}  // namespace simtrain::host
