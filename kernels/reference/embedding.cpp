#include "embedding.hpp"

#include <cstddef>

namespace simtrain::reference {

std::vector<float> embedding_forward(const std::vector<float>& table, const std::vector<int>& ids,
                                     const std::vector<float>& positions, const std::vector<int>& position_ids,
                                     int64_t hidden) {
  std::vector<float> out(ids.size() * hidden);
  for (std::size_t t = 0; t < ids.size(); ++t)
    for (int64_t c = 0; c < hidden; ++c)
      out[t * hidden + c] =
          table[ids[t] * hidden + c] + (positions.empty() ? 0.f : positions[position_ids[t] * hidden + c]);
  return out;
}

void embedding_backward(const std::vector<float>& dout, const std::vector<int>& ids,
                        const std::vector<int>& position_ids, std::vector<float>& dtable,
                        std::vector<float>& dpositions, int64_t hidden) {
  for (std::size_t t = 0; t < ids.size(); ++t)
    for (int64_t c = 0; c < hidden; ++c) {
      dtable[ids[t] * hidden + c] += dout[t * hidden + c];
      if (!dpositions.empty()) dpositions[position_ids[t] * hidden + c] += dout[t * hidden + c];
    }
}

}  // namespace simtrain::reference
