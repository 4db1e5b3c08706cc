#pragma once
// What one transformer layer keeps in memory for its backward, per
// micro-batch on one TP rank, under the training's recompute policy.
#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

// Inputs of the linear layers, kept for their weight gradients.
double linear_input_bytes(const Shard& x);

// All the layer keeps until its backward (Korthikanti et al. 2022, generalised).
double layer_activation_bytes(const Shard& x, const TrainingConfig& training);

}  // namespace simtrain::layers
