#pragma once
// CPU reference of causal scaled-dot-product attention (scale 1/sqrt(head_dim)),
// forward and backward, in double.
#include <vector>

#include "attention_shape.hpp"

namespace simtrain::reference {

struct AttentionForward {
  std::vector<float> out;
  std::vector<float> lse;  // per query row: ln of the sum of exp(scaled scores) over the keys it sees
};

AttentionForward attention_forward(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, const AttentionShape& shape);

struct AttentionGradients {
  std::vector<float> dq, dk, dv;
};

// Recomputes the probabilities from the saved log-sum-exp, as the kernel does.
AttentionGradients attention_backward(const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v, const std::vector<float>& out,
                                      const std::vector<float>& dout, const std::vector<float>& lse,
                                      const AttentionShape& shape);

}  // namespace simtrain::reference
