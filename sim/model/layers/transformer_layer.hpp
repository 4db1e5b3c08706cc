#pragma once
// One transformer layer's work on one TP rank: its attention (dense or
// latent: attention_ops, latent_attention_ops) and its MLP (dense: mlp_ops;
// mixture of experts: moe_ops) in order, their collectives (and context
// parallelism's: context_parallel_ops), what recompute runs again, its
// parameters (sim/model/parameter_count.hpp) and its memory (layer_memory).
#include "sim/model/layers/op_builder.hpp"

namespace simtrain::layers {

UnitWork layer_work(const Shard& x, const TrainingConfig& training);

}  // namespace simtrain::layers
