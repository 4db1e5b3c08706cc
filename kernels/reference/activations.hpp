#pragma once
// CPU references of the MLP activations: GELU (tanh approximation) and
// SwiGLU (silu(gate) * up), forward and backward, element by element.
#include <vector>

namespace simtrain::reference {

std::vector<float> gelu_forward(const std::vector<float>& x);
std::vector<float> gelu_backward(const std::vector<float>& dy, const std::vector<float>& x);

std::vector<float> swiglu_forward(const std::vector<float>& gate, const std::vector<float>& up);

struct SwigluGradients {
  std::vector<float> dgate, dup;
};
SwigluGradients swiglu_backward(const std::vector<float>& dy, const std::vector<float>& gate,
                                const std::vector<float>& up);

}  // namespace simtrain::reference
