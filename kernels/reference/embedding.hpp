#pragma once
// CPU reference of the embedding lookup, out[t] = table[ids[t]] (+ positions[position_ids[t]]),
// and of its backward, the scatter-add of out's gradient into the tables' gradients.
#include <cstdint>
#include <vector>

namespace simtrain::reference {

// `positions` may be empty (rotary models have no position table).
std::vector<float> embedding_forward(const std::vector<float>& table, const std::vector<int>& ids,
                                     const std::vector<float>& positions, const std::vector<int>& position_ids,
                                     int64_t hidden);

// Adds dout[t] into dtable[ids[t]] (and dpositions[position_ids[t]] unless dpositions is empty).
void embedding_backward(const std::vector<float>& dout, const std::vector<int>& ids,
                        const std::vector<int>& position_ids, std::vector<float>& dtable,
                        std::vector<float>& dpositions, int64_t hidden);

}  // namespace simtrain::reference
