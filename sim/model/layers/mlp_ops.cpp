#include "sim/model/layers/mlp_ops.hpp"

namespace simtrain::layers {

Op activation_op(const Shard& x, const std::string& prefix, int64_t elements) {
  const double e = x.element_bytes;
  return x.model.gated_mlp ? memory_op(prefix + "swiglu", elements, 3 * e) : memory_op(prefix + "gelu", elements, 2 * e);
}

std::vector<Step> mlp_steps(const Shard& x) {
  return {linear_input_norm(x, "ln2"), layer_linear(x, "fc1", x.tokens(), x.fc1_width(), x.hidden, true),
          activation_op(x, "", x.tokens() * x.ffn), layer_linear(x, "fc2", x.tokens(), x.hidden, x.ffn, false)};
}

}  // namespace simtrain::layers
