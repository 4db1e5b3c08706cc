#pragma once
// Peak memory of one GPU: weights, gradients and optimizer state (sharded as
// ZeRO shards them), activations, whose peak comes from walking the rank's
// own schedule (how many micro-batches are in flight at worst), and the
// reserve a process holds beyond tensors (docs/memory.md).
#include "sim/model/workload.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct MemoryBreakdown {
  double weights_bytes = 0;  // with, in fp8 (fp4) training, the linears' cached weight casts
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  int peak_in_flight_microbatches = 0;  // micro-batch chunks whose activations are held at the peak
  double reserve_bytes = 0;  // beyond tensors: CUDA context, NCCL buffers, workspaces (memory_reserve.hpp)
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + reserve_bytes;
  }
};

// Parameters one rank holds (all its chunks; the last stage's copy of tied embeddings included).
double parameters_on_rank(const Scenario& scenario, const Workload& workload, const Program& program, int rank);

// Bytes each rank writes to a checkpoint: bf16 weights and fp32 optimizer
// state (master weights, momentum, variance) as the strategy shards them,
// plus its RNG state.
std::vector<double> checkpoint_bytes_per_rank(const Scenario& scenario, const Workload& workload, const Program& program);

MemoryBreakdown memory_for_rank(const Scenario& scenario, const Workload& workload, const Program& program, int rank);

// The same for a GPU of each pipeline rank, from the pipeline schedule alone
// (the Program's passes follow it), without building the Program.
std::vector<MemoryBreakdown> memory_per_pipeline_rank(const Scenario& scenario, const Workload& workload);

}  // namespace simtrain
