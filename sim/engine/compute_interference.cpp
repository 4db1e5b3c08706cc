#include "sim/engine/compute_interference.hpp"

#include <algorithm>

#include "sim/scenario/flex_dispatcher.hpp"

namespace simtrain {

namespace {

// CTAs of one NCCL collective kernel: one per channel. NCCL's topology
// search finds rings of 20-30 GB/s per channel over a node's NVLink
// (speedArrayIntra / sm90SpeedArrayIntra in src/graph/search.cc, NVIDIA/nccl
// 5067397) and ncclTopoDupChannels doubles them: 24 channels on a DGX H100,
// as Nsight Systems shows an ncclAllGather launch of 24 blocks beside a GEMM
// on an H100 (forums.developer.nvidia.com/t/337991, "Compute-Communication
// Overlap Causes Severe GEMM Performance Degradation because of Tail
// Effect"). The same figure is taken for every GPU and collective: NCCL's
// channel count depends on the fabric in ways not modelled here.
constexpr int kNcclCtas = 24;

// Transformer Engine's userbuffers (tp_comm_overlap; initialize_ub's default
// configuration, transformer_engine/pytorch/module/base.py, NVIDIA/
// TransformerEngine d0067d0): the reduce-scatters beside the row-parallel
// linears' GEMMs ("pipeline") and beside the weight-gradient GEMMs ("bulk")
// run on num_sm = 16 SMs; the all-gathers beside the column-parallel
// linears' forward ("ring_exchange") move their chunks with the copy
// engines (use_ce) from num_sm = 1. The bulk all-gathers of the backward
// (16 SMs) are counted as ring exchanges: a lower bound.
constexpr int kUserbuffersReduceScatterSms = 16;
constexpr int kUserbuffersAllGatherSms = 1;

// DeepEP's normal-mode dispatch and combine kernels run on Buffer.num_sms
// SMs (deepseek-ai/DeepEP 567632dd, csrc/kernels/intranode.cu dispatch and
// combine: a launch of num_sms blocks), which Megatron-Core sets from
// moe_flex_dispatcher_num_sms; HybridEP's persistent kernels one block an SM
// (DeepEP hybrid-ep 94a9f8f6, docs/Hybrid-EP_Implementation.md section 8),
// num_sms_dispatch_api and num_sms_combine_api of them, both from the same
// setting (Megatron-LM d98e8a64, moe/token_dispatcher.py _HybridEPManager):
// flex_dispatcher_num_sms. HybridEP's preprocessing kernel (108 blocks by
// default) runs once a dispatch, before it, and is not counted beside compute.

}  // namespace

double ComputeInterference::sm_share(const Task& task) const {
  if (task.stream == Stream::compute || !is_collective(task.kind)) return 0;
  if (tp_in_userbuffers && task.stream == Stream::tp_overlap && task.dim == CommDim::tp) {
    if (task.kind == TaskKind::REDUCESCATTER) return userbuffers_reduce_scatter_sm_share;
    if (task.kind == TaskKind::ALLGATHER) return userbuffers_all_gather_sm_share;
  }
  if (flex_sm_share > 0 && task.dim == CommDim::ep && task.kind == TaskKind::ALLTOALL) return flex_sm_share;
  return nccl_sm_share;
}

ComputeInterference compute_interference(const Scenario& scenario) {
  const double sms = std::max(1, scenario.cluster.gpu.sm_count);
  // A GPU with fewer than twice the CTAs' SMs (none built in) keeps half for the compute.
  auto share = [&](int ctas) { return std::min(ctas / sms, 0.5); };
  return {
      .nccl_sm_share = share(kNcclCtas),
      .userbuffers_all_gather_sm_share = share(kUserbuffersAllGatherSms),
      .userbuffers_reduce_scatter_sm_share = share(kUserbuffersReduceScatterSms),
      .flex_sm_share =
          scenario.parallel.moe_dispatcher == MoeDispatcher::flex
              ? share(int(flex_dispatcher_num_sms(scenario.parallel, scenario.cluster.topology.gpus_per_node)))
              : 0,
      .tp_in_userbuffers = scenario.parallel.tp_comm_overlap && scenario.parallel.sequence_parallel &&
                           scenario.parallel.tensor > 1,
  };
}

}  // namespace simtrain
