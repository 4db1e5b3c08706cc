#include "sim/step/memory_reserve.hpp"

namespace simtrain {

namespace {

constexpr double MiB = 1024.0 * 1024;

// A CUDA primary context of a PyTorch process, as nvidia-smi shows it before
// any tensor is allocated: 616 MiB (LMCache issue #4019, 2026, CUDA 12/13
// with lazy module loading; PyTorch issue #107667 reports about 300 MB for a
// bare context, over 1 GB before CUDA 11.7's lazy loading).
constexpr double cuda_context_bytes = 616 * MiB;

// GPU memory an NCCL communicator holds once it has run a collective,
// measured per PyTorch process group on 4 NVLink-connected A100s (NVIDIA/nccl
// issue #964, 2023): 544 MiB for a group of 2 ranks, 688 MiB for more (its
// buffers: NCCL_BUFFSIZE, 4 MiB by default, and the LL and LL128 protocols'
// per channel and peer; more channels, as on H100's NVLink, hold more:
// NVIDIA/nccl issue #986).
constexpr double nccl_pair_bytes = 544 * MiB;
constexpr double nccl_group_bytes = 688 * MiB;

// Transformer Engine's cuBLAS workspace (get_cublas_workspace_size_bytes in
// transformer_engine/pytorch/module/base.py): 32 MiB from Hopper on, 4 MiB
// before. Hopper and later are the built-in GPUs with fp8 tensor cores.
double workspace_bytes(const GpuSpec& gpu) { return (gpu.peak_fp8_flops > 0 ? 32 : 4) * MiB; }

}  // namespace

std::vector<int64_t> nccl_group_sizes(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  std::vector<int64_t> sizes;
  for (const int64_t size : {p.tensor, p.context, p.data_context(), p.pipeline, p.expert, p.expert > 1 ? p.expert_data() : 1})
    if (size > 1) sizes.push_back(size);
  if (s.model.tie_word_embeddings && p.pipeline > 1) sizes.push_back(2);  // first and last stage
  if (p.world_size() > 1) sizes.push_back(p.world_size());
  return sizes;
}

MemoryReserve default_memory_reserve(const Scenario& s) {
  MemoryReserve reserve;
  reserve.cuda_context_bytes = cuda_context_bytes;
  for (const int64_t size : nccl_group_sizes(s)) reserve.nccl_bytes += size == 2 ? nccl_pair_bytes : nccl_group_bytes;
  reserve.workspace_bytes = workspace_bytes(s.cluster.gpu);
  return reserve;
}

double memory_reserve_bytes(const Scenario& s) {
  return s.cluster.memory_reserve_bytes >= 0 ? s.cluster.memory_reserve_bytes : default_memory_reserve(s).total_bytes();
}

}  // namespace simtrain
