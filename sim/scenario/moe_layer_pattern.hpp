#pragma once
// Megatron-Core's --moe-layer-freq: which layers of a model with experts are
// mixtures of experts. An integer N puts one every N layers from the first
// (layer i when i % N == 0); a Python list expression of 1s (MoE) and 0s
// (dense), lists joined by + and repeated by *, gives every layer
// ("[0]*3+[1]*58", "([1]*3+[0]*1)*3"), as Megatron evaluates it.
#include <cstdint>
#include <string>
#include <vector>

namespace simtrain {

// One entry per layer, true for MoE. Throws InputError naming `source` and
// `flag` where the text is neither form, or its list is not `layers` long.
std::vector<bool> moe_layer_pattern(const std::string& text, int64_t layers, const std::string& source,
                                    const std::string& flag);

}  // namespace simtrain
