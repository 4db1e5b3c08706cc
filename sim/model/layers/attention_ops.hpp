#pragma once
// Dense (multi-head or grouped-query) attention as one TP rank runs it: the
// fused qkv projection from the normed input, then the attention itself
// (a fused flash kernel, or scores, softmax, dropout and context products).
#include <vector>

#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

// qkv: this rank's query, key and value heads from the normed input.
std::vector<Step> attention_projections(const Shard& x);

// The attention between the projections and proj, for any attention (latent
// attention's too: its q/k and v head sizes differ); with context
// parallelism one block per K/V chunk of the ring.
std::vector<Step> attention_core(const Shard& x, bool flash_attention);

}  // namespace simtrain::layers
