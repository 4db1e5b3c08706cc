#pragma once
// A model's parameters, all of them and those one token uses: the figures
// model cards publish ("46.7B total, 12.9B active"), from its config alone.
#include "sim/scenario/model_config.hpp"

namespace simtrain {

// Whole numbers, held in doubles as the workload's totals are (exact far
// beyond any model's size).
struct ParameterCount {
  double total = 0;
  // What one token's forward pass uses: all but the routed experts it is not
  // sent to (its router and shared experts included). It includes the input
  // embedding, as Mistral and Qwen count it; DeepSeek's published figure
  // leaves it out (active - embedding).
  double active = 0;
  double embedding = 0;  // the token table (and a learned position table)
};

// For a dense model, total is Workload::total_parameters (the workload counts
// the same weights; tests/test_parameter_count.cpp checks every shipped scenario).
ParameterCount count_parameters(const ModelConfig& model);

}  // namespace simtrain
