#pragma once
// What the host does for a compute Work: how many GPU kernels its ops
// launch as Megatron-Core 0.15 and Transformer Engine 2.9 run them, how long
// the host takes to launch them (eager PyTorch ops, Transformer Engine's C++
// calls, Triton kernels; one graph launch for the kernels a CUDA graph scope
// captures), and how often the host waits for the GPU inside the work (the
// alltoall token dispatcher's tokens-per-expert device-to-host copy,
// masked_select's nonzero). Counts, constants and their sources: docs/host.md
// and the table in host_launches.cpp.
#include <span>
#include <string>
#include <vector>

#include "sim/model/workload.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// Megatron-Core's switches that change what the host launches and that the
// scenario does not hold (yet). Defaults: Megatron-Core's own
// (megatron/core/transformer/transformer_config.py), but moe_grouped_gemm
// and moe_aux_loss, which the MoE recipes of NeMo 25.11 turn on.
struct HostSettings {
  bool moe_permute_fusion = false;  // --moe-permute-fusion: TE's Triton permutation kernels
  bool moe_router_fusion = false;   // --moe-router-fusion: TE's fused top-k and aux-loss kernels
  bool moe_grouped_gemm = true;     // --moe-grouped-gemm: TEGroupedMLP (else SequentialMLP, a linear per expert)
  bool moe_aux_loss = true;         // --moe-aux-loss-coeff > 0: the load-balancing loss's kernels
  bool moe_router_force_load_balancing = false;  // benchmarks' random router logits (RandomSTE)
  bool bias_activation_fusion = false;  // --bias-activation-fusion: the MLPs' jit-fused (weighted) SwiGLU
  bool bias_dropout_fusion = false;     // --bias-dropout-fusion: the residual's jit-fused bias-dropout-add
  bool te_cross_entropy = false;    // --cross-entropy-loss-fusion with --cross-entropy-fusion-impl te
  // --cuda-graph-impl: "none", "transformer_engine" or "local" (counted as
  // transformer_engine: one graph a layer and pass).
  std::string cuda_graph_impl = "none";
  // --cuda-graph-scope: attn, mlp, moe, moe_router, moe_preprocess,
  // full_iteration; empty with an impl: the whole layer.
  std::vector<std::string> cuda_graph_scope;
};

// NeMo 25.11's Qwen3-30B-A3B recipe on H100 in fp8 (Megatron-Bridge 97ad8cc6f:
// qwen_provider.py:389-396, qwen3_llm_pretrain.py:60-74, qwen3_moe.py:287,
// gpt_provider.py:180; its H100 FP8_CS preset sets no CUDA graphs,
// qwen3_workload_base_configs.py:233-239).
HostSettings nemo_qwen3_moe_host_settings();

// Host seconds per launch, by how the kernel is launched (sources beside
// the values in host_launches.cpp).
struct HostLaunchSeconds {
  double python_forward;   // a forward PyTorch/TE call from Python that records an autograd node
  double python_backward;  // a call from a Python autograd Function's backward (TE, Megatron)
  double cpp_backward;     // a call from PyTorch's C++ autograd engine (ATen backward formulas)
  double follow_on;        // a further kernel launched inside the same native call
  double triton;           // a Triton kernel through its Python launcher
  double graph;            // one CUDA graph replay from Python
};
const HostLaunchSeconds& host_launch_seconds();

struct HostWork {
  int kernels = 0;          // GPU kernels (and copies) the work's ops launch
  double launch_seconds = 0;  // host time to launch them; a captured scope's kernels cost one graph launch
  int syncs = 0;            // times the host waits for the GPU inside the work
  int graph_launches = 0;   // CUDA graph replays among the launches
};

// The host's side of a compute Work's ops (forward, backward or recompute
// ops of the workload; the optimizer's). Throws std::invalid_argument for
// an op name the table does not know (a test runs every shipped scenario's
// ops through it), InputError for a CUDA graph scope that cannot capture the
// scenario's layers (moe and full_iteration need a drop-and-pad MoE layer:
// a dropless one syncs).
HostWork host_work(std::span<const Op> ops, const Scenario& scenario, const HostSettings& settings = {});

}  // namespace simtrain
