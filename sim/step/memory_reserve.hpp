#pragma once
// What a training process holds on its GPU beyond the tensors the memory
// model counts: the CUDA context, NCCL's communication buffers and the GEMM
// library's workspace. A scenario may state it (cluster.memory_reserve_GiB);
// otherwise the default here, each part from a published measurement or
// library default (docs/memory.md, "The reserve").
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct MemoryReserve {
  double cuda_context_bytes = 0;
  double nccl_bytes = 0;
  double workspace_bytes = 0;
  double total_bytes() const { return cuda_context_bytes + nccl_bytes + workspace_bytes; }
};

// The NCCL communicators one rank of the scenario's layout uses: its groups
// of more than one rank among tensor, context, data x context (gradients and
// the distributed optimizer), pipeline, expert, expert-data and the tied
// embeddings' pair, and the world's (Megatron's barriers).
std::vector<int64_t> nccl_group_sizes(const Scenario& scenario);

// The default reserve of one rank.
MemoryReserve default_memory_reserve(const Scenario& scenario);

// cluster.memory_reserve_GiB where the scenario gives it, else the default's total.
double memory_reserve_bytes(const Scenario& scenario);

}  // namespace simtrain
