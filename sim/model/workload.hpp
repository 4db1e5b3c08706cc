#pragma once
// The model broken into operations: for one transformer layer, the embedding
// and the output head, the ops of each pass (forward, backward-input,
// backward-weight, recompute) with shapes, FLOPs and HBM bytes, as one
// tensor-parallel rank executes them. fp8 and fp4 training follow Transformer
// Engine's recipes (sim/model/quantization.hpp): only the operands of the
// layers' linear GEMMs are fp8 (fp4), cast by memory-bound kernels around
// them; everything else, the output layer included, stays bf16.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/model/task_kind.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// Which efficiency parameters of the cost model apply to an op.
enum class OpClass { gemm, attention, memory_bound, optimizer };
std::string to_string(OpClass op_class);

struct Op {
  std::string name;            // "qkv", "attn", "fc1", "ln1", ...
  OpClass op_class = OpClass::memory_bound;
  std::vector<int64_t> shape;  // gemm: {M, N, K}; attention: {batch, heads, seq, head_dim}; else {elements}
  double flops = 0;            // as Megatron counts them (MFU, the step's TFLOP/s)
  double bytes = 0;            // HBM traffic, reads + writes
  // gemm: a layer's linear in fp8 or fp4 training, reading operands of the
  // training's format and running at its peak.
  bool low_precision_operands = false;
  // Executed beyond `flops`: FlashAttention's backward recomputes the score
  // matrix, 5 products against the forward's 2, where Megatron counts twice the forward.
  double uncounted_flops = 0;
  // gemm: M is `gemm_groups` independent GEMMs of M / gemm_groups rows, one
  // kernel each (a rank's experts), `gemm_streams` of them running at once.
  int64_t gemm_groups = 1;
  int64_t gemm_streams = 1;
};

// A fused attention backward's FLOPs beyond Megatron's count (twice the
// forward's), as a share of that count: the recomputed scores, half a forward.
inline constexpr double kAttentionBackwardRecomputedShare = 0.25;

// The query-key pairs of a causal attention over `sequence` tokens in which
// each query attends to at most `window` keys (itself and the window - 1
// before it; 0: no window): query i attends to min(i + 1, W), so
//   sum over i < S of min(i + 1, W) = W(W + 1)/2 + (S - W)·W   where W < S,
//                                    S(S + 1)/2                 otherwise.
double causal_attention_pairs(int64_t sequence, int64_t window);

// The precision an op computes in: in fp8 (fp4) training only the linears'
// GEMMs read fp8 (fp4) operands (Transformer Engine); attention, the logits
// GEMM and everything else run in bf16.
Dtype op_dtype(const Op& op, Dtype training);

double total_flops(const std::vector<Op>& ops);
double total_bytes(const std::vector<Op>& ops);

// Tensor-parallel collectives issued during a pass. Blocking ones run back
// to back after the pass's compute; overlapped ones are issued as the pass
// starts and run beside its compute, what follows the pass waiting for them
// (sequence parallelism's re-gather of a column-parallel linear's input for
// its weight gradient, overlapped with the input-gradient GEMM).
// Expert parallelism's token dispatch and combine are collectives of the
// same kind, over the layer's expert-parallel group instead of its TP group.
// Context parallelism's exchanges are too: the all-to-alls of a2a and
// a2a+p2p over its all-to-all group, the K/V exchange over its ring group
// (each the CP group but in a2a+p2p: its inner and outer groups). The flex
// dispatcher's exchanges over an EP group spanning nodes go over its parts:
// the members on one node (expert_node) and the i-th member of each node
// (expert_across).
enum class LayerGroup : uint8_t { tensor, expert, context_a2a, context_ring, expert_node, expert_across };
inline bool is_expert_group(LayerGroup group) {
  return group == LayerGroup::expert || group == LayerGroup::expert_node || group == LayerGroup::expert_across;
}

struct TpCollectives {
  TaskKind kind = TaskKind::ALLREDUCE;
  int count = 0;     // how many
  double bytes = 0;  // size of each (the full, unsharded tensor; an all-to-all's: what one rank sends)
  bool overlapped = false;
  LayerGroup group = LayerGroup::tensor;
  // A column-parallel linear's input-gradient reduction, issued before its
  // weight-gradient GEMM and waited for after it (Megatron's
  // LinearWithGradAccumulationAndAsyncCommunication.backward): overlapped
  // where the task computes the weight gradients (not a zb_h1 B task, whose
  // weight gradients wait for its W task).
  bool beside_weight_gradient = false;
  // Whether it runs beside the compute of a task that does (or does not)
  // compute the weight gradients, instead of blocking after it.
  bool beside_compute(bool task_computes_weight_gradients) const {
    return overlapped || (beside_weight_gradient && task_computes_weight_gradients);
  }
};

struct Pass {
  std::vector<Op> ops;
  std::vector<TpCollectives> tp;
  double flops() const;
  double bytes() const;
};

// The work of one model unit (a layer, the embedding, or the head).
struct UnitWork {
  Pass forward, backward_input, backward_weight, recompute;
  double parameters = 0;  // held by one TP rank
  // Of those, the routed experts' (one EP rank's share): reduced over the
  // expert-data-parallel group, the others over the whole data-parallel one.
  double expert_parameters = 0;
  // fp8 (fp4) training: the weights of its linear layers (held by one TP
  // rank), cast once a step (TE caches the cast after the first micro-batch).
  double low_precision_weights = 0;
  // Activation bytes one micro-batch leaves stored on one TP rank until its
  // backward, under the scenario's recompute policy; the part kept until the
  // backward-weight pass (inputs of the linear layers) is weight_grad_bytes.
  double activation_bytes = 0;
  double weight_grad_activation_bytes = 0;
};

struct Workload {
  UnitWork layer;      // one transformer layer (in a model with experts, an MoE layer)
  // A model mixing dense and MoE layers (DeepSeek's first_k_dense_replace,
  // Qwen's mlp_only_layers): its dense layers' work, and which layers are
  // dense (empty in any other model: every layer is `layer`).
  UnitWork dense_layer;
  std::vector<bool> dense_layers;
  // Block recompute (training.recompute_block_layers): the layers that keep
  // their activations instead (the ones after the first N of their model
  // stage), as `layer` and `dense_layer` without recompute; empty otherwise.
  UnitWork kept_layer, kept_dense_layer;
  std::vector<bool> kept_layers;
  // Sliding-window attention on some layers (ModelConfig::sliding_layers):
  // the works of those layers, as the four above with the window's
  // attention, and which layers they are (empty where no layer slides).
  UnitWork sliding_layer, sliding_dense_layer, kept_sliding_layer, kept_sliding_dense_layer;
  std::vector<bool> sliding_layers;
  const UnitWork& layer_at(int index) const;
  int dense_layers_among(int first_layer, int layers) const;  // of [first_layer, first_layer + layers)
  // The works of layers [first_layer, first_layer + layers) with how many
  // layers run each, in the order layer, dense_layer, kept_layer,
  // kept_dense_layer, then their sliding ones; those no layer runs left out.
  std::vector<std::pair<const UnitWork*, int>> layer_works_among(int first_layer, int layers) const;
  UnitWork embedding;  // first pipeline stage: token (and position) embedding
  UnitWork head;       // last pipeline stage: final norm, logits, cross-entropy
  // Tied embeddings over more than one stage: the last stage's copy of the
  // word embeddings (one TP rank's vocabulary rows, no position table), part
  // of head.parameters, whose gradient it all-reduces with the first stage's
  // (Megatron's embedding group). 0 otherwise.
  double tied_embedding_copy_parameters = 0;

  double total_parameters = 0;         // whole model, unsharded
  double model_flops_per_step = 0;     // forward + backward, without recompute (for MFU)
  double hardware_flops_per_step = 0;  // what the GPUs execute, recompute included
  double tokens_per_step = 0;
  double stage_boundary_bytes = 0;     // bf16 activation sent between pipeline stages per micro-batch, per TP rank
  // Context parallelism: the K/V exchange's buffers while a layer's attention runs.
  double cp_exchange_buffer_bytes = 0;
  // Bytes per parameter of mixed-precision Adam (ZeRO paper, section 3.1).
  double grad_bytes_per_parameter = 4;              // fp32 main grads, reduced in fp32 unless grad_reduce_in_bf16
  double weight_bytes_per_parameter = 2;            // bf16 weights, as ZeRO gathers them
  double optimizer_state_bytes_per_parameter = 12;  // fp32 master weights, momentum and variance
  std::vector<int> stage_layers;       // layers of each model stage (sim/model/partition.hpp)
};

// The model units a stage holds: the embedding on the first stage, its
// layers, the head on the last stage (of workload.stage_layers.size()).
struct StageUnits {
  bool embedding = false;
  int first_layer = 0;  // the stage's layers are [first_layer, first_layer + layers)
  int layers = 0;
  bool head = false;
};
StageUnits stage_units(const Workload& workload, int stage);

Workload build_workload(const Scenario& scenario);

}  // namespace simtrain
