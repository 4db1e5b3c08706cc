#pragma once
// The training software's switches that change what the host launches
// (the scenario's "software" section): Megatron-Core's fusions, its grouped
// GEMM, the router's auxiliary loss, CUDA graphs. What each changes, kernel
// by kernel: sim/model/host_launches.hpp and docs/host.md.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

// Defaults: Megatron-Core's own (megatron/core/transformer/transformer_config.py),
// but moe_grouped_gemm and moe_aux_loss, which the MoE recipes of NeMo 25.11 turn on.
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
  bool operator==(const HostSettings&) const = default;
};

// The values --cuda-graph-impl and --cuda-graph-scope take.
const std::vector<std::string>& cuda_graph_implementations();
const std::vector<std::string>& cuda_graph_scopes();

// The section's field names, in the order docs/scenario-format.md lists them.
const std::vector<std::string>& host_settings_keys();

// Reads the "software" section (null: absent, every default). Throws
// InputError naming `file`, the field and the reason: a value of the wrong
// type, an unknown implementation or scope, a scope without an
// implementation, an unknown field.
HostSettings parse_host_settings(const nlohmann::json* section, const std::string& file);

}  // namespace simtrain
