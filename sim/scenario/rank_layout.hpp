#pragma once
// Where each rank sits in the parallel layout, in Megatron's order: the
// tensor-parallel rank varies fastest, then the data-parallel rank, then the
// pipeline rank.
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct RankLayout {
  int tensor = 1, data = 1, pipeline = 1;  // parallel sizes

  explicit RankLayout(const ParallelConfig& parallel)
      : tensor(static_cast<int>(parallel.tensor)), data(static_cast<int>(parallel.data)),
        pipeline(static_cast<int>(parallel.pipeline)) {}

  int world_size() const { return tensor * data * pipeline; }
  int rank(int tp, int dp, int pp) const { return tp + tensor * (dp + data * pp); }
};

}  // namespace simtrain
