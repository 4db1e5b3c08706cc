#pragma once
// A dense MLP as one TP rank runs it: its norm, fc1 (SwiGLU: gate and up
// fused), the activation, fc2; and the activation an MoE layer's experts share.
#include <string>
#include <vector>

#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

// The MLP's activation over `elements`: SwiGLU reads gate and up and writes one, GELU reads one and writes one.
Op activation_op(const Shard& x, const std::string& prefix, int64_t elements);

// ln2, fc1, the activation, fc2 (intermediate_size wide, split over TP).
std::vector<Step> mlp_steps(const Shard& x);

}  // namespace simtrain::layers
