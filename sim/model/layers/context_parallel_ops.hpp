#pragma once
// Context parallelism's exchanges around a layer's attention (ring attention's
// K/V hops, all_gather's gathered K/V, Ulysses' all-to-alls) and the buffers
// they hold. The attention blocks themselves are attention_core's.
#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

// The exchanges of one pass: forward (`gradients` false, recompute too) or backward.
void add_cp_exchange(const Shard& x, Pass& pass, bool gradients);

// What the exchanges hold while one layer's attention runs.
double cp_exchange_buffer_bytes(const Shard& x);

}  // namespace simtrain::layers
