#pragma once
// CPU reference of softmax cross-entropy over the vocabulary, on fp32 logits
// [rows][vocab] with one target index per row; in double.
#include <cstdint>
#include <vector>

namespace simtrain::reference {

struct CrossEntropyForward {
  std::vector<float> loss;  // per row: lse - logit[target]
  std::vector<float> lse;   // per row: ln sum exp(logits)
};

CrossEntropyForward cross_entropy_forward(const std::vector<float>& logits, const std::vector<int>& targets,
                                          int64_t rows, int64_t vocab);

// dlogits = (softmax - onehot(target)) * dloss[row].
std::vector<float> cross_entropy_backward(const std::vector<float>& logits, const std::vector<int>& targets,
                                          const std::vector<float>& lse, const std::vector<float>& dloss,
                                          int64_t rows, int64_t vocab);

}  // namespace simtrain::reference
