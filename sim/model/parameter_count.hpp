#pragma once
// A model's parameters, all of them and those one token uses: the figures
// model cards publish ("46.7B total, 12.9B active"), from its config alone;
// and the same count for one tensor-parallel rank's share of a layer, the
// embedding and the head, which the workload holds (sim/model/workload.hpp):
// the one place parameters are counted.
#include <cstdint>

#include "sim/scenario/model_config.hpp"

namespace simtrain {

// Whole numbers, held in doubles as the workload's totals are (exact far
// beyond any model's size).
struct ParameterCount {
  double total = 0;
  // What one token's forward pass uses: all but the routed experts it is not
  // sent to (its router and shared experts included). It includes the input
  // embedding, as Mistral and Qwen count it; DeepSeek's and OpenAI's published
  // figures leave it out (active - embedding).
  double active = 0;
  double embedding = 0;  // the token table (and a learned position table)
};

ParameterCount count_parameters(const ModelConfig& model);

// One transformer layer's parameters on one of `tp` tensor-parallel ranks:
// the column- and row-parallel linears split over the ranks (an expert's
// too: expert_tensor_parallel_size = TP), the rest (norms, row-parallel
// biases, latent attention's down-projections, the router) whole on each.
struct LayerParameters {
  double attention_weights = 0;  // qkv (or latent attention's projections) and proj
  double mlp_weights = 0;        // a dense MLP's fc1 and fc2, or an MoE layer's shared experts'
  double expert_weights = 0;     // the routed experts' fc1 and fc2, of the experts held
  double expert_biases = 0;      // ... and their biases
  double vectors = 0;            // norms, the other linears' biases, attention sinks
  double router = 0;             // the router, its bias (and Qwen2-MoE's shared-expert gate)
  double linear_weights() const { return attention_weights + mlp_weights + expert_weights; }
  double experts() const { return expert_weights + expert_biases; }
  double total() const { return linear_weights() + expert_biases + vectors + router; }
};
// A layer whose MLP is dense, intermediate_size wide.
LayerParameters dense_layer_parameters(const ModelConfig& model, int64_t tp);
// An MoE layer holding `experts` of its routed experts (the rank's local
// experts; num_experts_per_tok for what one token uses).
LayerParameters moe_layer_parameters(const ModelConfig& model, int64_t tp, int64_t experts);

// The input embedding's tables on one TP rank: its rows of the token table
// (Megatron pads the vocabulary to a multiple of tp) and a learned position table whole.
double embedding_parameters(const ModelConfig& model, int64_t tp);
// The head's: the final norm and, untied, its rows of the output layer.
double head_parameters(const ModelConfig& model, int64_t tp);

}  // namespace simtrain
