#pragma once
// Multi-head latent attention's projections (DeepSeek-V2 report, section 2.1;
// Megatron-Core's MLASelfAttention) and the TP collectives around them. The
// attention itself is attention_core's (attention_ops.hpp).
#include <vector>

#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

// From the normed input to the heads' queries, keys and values.
std::vector<Step> latent_attention_projections(const Shard& x);

// Where the up-projections (and the rotary key) cross the column-parallel region.
void add_latent_attention_collectives(const Shard& x, Pass& forward, Pass& backward);

}  // namespace simtrain::layers
