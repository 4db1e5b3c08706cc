#pragma once
// The shape of a causal attention call, shared by the CUDA kernel and its CPU
// reference: q, k, v, out and their gradients are [batch][heads][seq][head_dim],
// row-major; the log-sum-exp is [batch][heads][seq].
#include <cstdint>

namespace simtrain {

struct AttentionShape {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;

  int64_t rows() const { return batch * heads * seq; }
  int64_t elements() const { return rows() * head_dim; }
};

}  // namespace simtrain
