#pragma once
// A mixture-of-experts layer's MLP as Megatron-Core's MoELayer runs it on
// one TP rank of one EP rank: how many rows its experts receive, its ops
// (router, permutation, the experts' grouped GEMMs, shared experts) and the
// token exchanges around them.
#include <cstdint>
#include <vector>

#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

// The experts of the rank's share (x.ep, local_experts, top_k, widths,
// dispatcher) and the rows the busiest EP rank's experts receive per micro-batch.
void size_experts(const Scenario& scenario, Shard& x);

// Rows one TP rank sends and receives in the EP exchange: the busiest rank's,
// before sequence parallelism's TP gather multiplies them.
int64_t exchanged_rows(const Shard& x);

// The expected number of `holders` (EP ranks, or the nodes they span), each
// holding an equal share of `experts`, that hold any of a token's `top_k`
// experts under uniform routing: H (1 - C(E - E/H, K) / C(E, K)). DeepEP
// (the flex dispatcher) sends a token once to each of them.
double expected_destinations(int64_t experts, int64_t top_k, int64_t holders);

// ln2 is the layer's (transformer_layer.cpp); from the router to the shared experts.
std::vector<Step> moe_steps(const Shard& x);

// The token exchange around the experts over EP and TP, and the shared experts' TP boundaries.
void add_moe_collectives(const Shard& x, Pass& forward, Pass& backward);

}  // namespace simtrain::layers
