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

// The nodes of `gpus_per_node` GPUs (rank r on node r / gpus_per_node) each
// expert-parallel group spans, each node holding as many of its members: the
// members are TP apart, so a group spans TP x EP ranks from the start of a
// node where that and each pipeline stage's ranks fill whole nodes. 1 where
// a group lies within one node, or would split unevenly.
inline int64_t expert_group_nodes(const ParallelConfig& parallel, int64_t gpus_per_node) {
  const int64_t span = parallel.tensor * parallel.expert, stage = parallel.tensor * parallel.data_context();
  if (span <= gpus_per_node || span % gpus_per_node != 0 || gpus_per_node % parallel.tensor != 0 ||
      stage % gpus_per_node != 0)
    return 1;
  return span / gpus_per_node;
}

}  // namespace simtrain
