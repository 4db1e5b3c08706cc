#pragma once
// The SMs the flex dispatcher's backend runs its dispatch and combine
// kernels on, where the scenario leaves Megatron-Core's
// moe_flex_dispatcher_num_sms unset (None: "lets each backend use its own
// default", NVIDIA/Megatron-LM d98e8a64, transformer_config.py).
#include <cstdint>

#include "sim/scenario/rank_layout.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// DeepEP: _DeepepManager sets Buffer.num_sms to 20 (Megatron-LM d98e8a64,
// moe/token_dispatcher.py).
constexpr int64_t kDeepepDefaultSms = 20;
// HybridEP: the Configurer's defaults, 24 SMs for an EP group inside one
// NVLink domain, 8 for one across nodes (deepseek-ai/DeepEP hybrid-ep
// 94a9f8f6, csrc/hybrid_ep/config.cuh: num_sms_dispatch_api and
// num_sms_combine_api value_or((num_of_nodes == 1) ? 24 : 8)). A node is
// the NVLink domain here (no multi-node NVLink).
constexpr int64_t kHybridepDefaultSmsInNode = 24;
constexpr int64_t kHybridepDefaultSmsAcrossNodes = 8;

// Whether the flex dispatcher's group (Megatron's TP x EP group) reaches
// beyond one node: HybridEP's num_of_nodes > 1 (deep_ep/hybrid_ep_buffer.py),
// the nodes its exchanges are lowered over (a HybridEP group that would
// span nodes unevenly is refused).
inline bool flex_group_spans_nodes(const ParallelConfig& parallel, int64_t gpus_per_node) {
  return expert_group_nodes(parallel, gpus_per_node) > 1;
}

inline int64_t flex_dispatcher_num_sms(const ParallelConfig& parallel, int64_t gpus_per_node) {
  if (parallel.moe_flex_dispatcher_num_sms) return *parallel.moe_flex_dispatcher_num_sms;
  if (parallel.moe_flex_backend == FlexBackend::deepep) return kDeepepDefaultSms;
  return flex_group_spans_nodes(parallel, gpus_per_node) ? kHybridepDefaultSmsAcrossNodes : kHybridepDefaultSmsInNode;
}

}  // namespace simtrain
