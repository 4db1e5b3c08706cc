#pragma once
// Where each rank sits in the parallel layout, in Megatron's order: the
// tensor-parallel rank varies fastest, then the data-parallel rank, then the
// pipeline rank. With context parallelism the data-parallel coordinate is
// Megatron's dp_cp one (the context-parallel rank fastest, then the
// data-parallel rank: tp-cp-dp-pp order), as the ranks holding the same
// weights reduce gradients and shard the optimizer over DP x CP.
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct RankLayout {
  int tensor = 1, data = 1, pipeline = 1;  // parallel sizes; data: data x context parallel
  int context = 1;                         // context-parallel ranks within the data coordinate

  explicit RankLayout(const ParallelConfig& parallel)
      : tensor(static_cast<int>(parallel.tensor)), data(static_cast<int>(parallel.data_context())),
        pipeline(static_cast<int>(parallel.pipeline)), context(static_cast<int>(parallel.context)) {}

  int world_size() const { return tensor * data * pipeline; }
  int rank(int tp, int dp, int pp) const { return tp + tensor * (dp + data * pp); }
};

}  // namespace simtrain
