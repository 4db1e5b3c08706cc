#include "activations.hpp"

#include "kernel_math.hpp"

namespace simtrain::reference {

std::vector<float> gelu_forward(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = math::gelu(x[i]);
  return y;
}

std::vector<float> gelu_backward(const std::vector<float>& dy, const std::vector<float>& x) {
  std::vector<float> dx(x.size());
  for (size_t i = 0; i < x.size(); ++i) dx[i] = dy[i] * math::gelu_grad(x[i]);
  return dx;
}

std::vector<float> swiglu_forward(const std::vector<float>& gate, const std::vector<float>& up) {
  std::vector<float> y(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) y[i] = math::silu(gate[i]) * up[i];
  return y;
}

SwigluGradients swiglu_backward(const std::vector<float>& dy, const std::vector<float>& gate,
                                const std::vector<float>& up) {
  SwigluGradients result{std::vector<float>(gate.size()), std::vector<float>(gate.size())};
  for (size_t i = 0; i < gate.size(); ++i) {
    result.dgate[i] = dy[i] * up[i] * math::silu_grad(gate[i]);
    result.dup[i] = dy[i] * math::silu(gate[i]);
  }
  return result;
}

}  // namespace simtrain::reference
