#include "sim/model/layers/layer_memory.hpp"

namespace simtrain::layers {

namespace {

// What the MLP's activation needs in the backward: its input; in an MoE
// layer also each routed row's probability, which Megatron-Core multiplies
// in the experts' activation (WeightedSwiGLUFunction saves its input and the
// probabilities; fused_bias_swiglu.py at 92c8482e6), so the unpermutation
// after the experts sums their outputs without weights and keeps only its
// row map (the alltoall dispatcher calls unpermute without probs:
// token_dispatcher.py combine_postprocess; TE v2.9 permutation.py
// _moe_unpermute_mask_map saves its input only with merging_probs), and the
// router's probabilities over every expert, fp32.
double mlp_activation_input_bytes(const Shard& x) {
  if (!x.moe()) return double(x.tokens()) * x.fc1_width() * x.element_bytes;
  const double rows = double(x.rank_expert_rows());
  const double probabilities = (double(x.router_tokens()) * x.model.num_experts + rows) * kFp32Bytes;
  return (rows * x.expert_fc1_width() + double(x.tokens()) * x.shared_fc1_width()) * x.element_bytes + probabilities;
}

// What selective recompute's modules (Megatron's recompute_modules) leave
// unstored, the tensors layer_activation_bytes counts: mlp, a dense MLP's
// internals (its input, the pre-MLP norm's, stays); moe_act, the routed
// experts' activation output (fc2's input; in fp8 training Megatron has fc2
// keep the original instead of its cast, and discards it); layernorm, the
// outputs of the norms Transformer Engine does not fuse into the linear
// after them (latent attention's input norm: the down-projections' input;
// an MoE layer's pre-MLP norm: the router's and the shared experts' input);
// mla_up_proj, the up-projections' inputs (the normed latents) and their
// outputs, the attention's Q, K and V (the latents before their norms stay,
// the checkpoint's inputs).
double recomputed_module_bytes(const Shard& x, const TrainingConfig& training) {
  const double e = x.linear_operand_bytes();
  const double norm_output = double(x.local_tokens()) * x.hidden * e;  // as the linear after a norm keeps it
  double bytes = 0;
  if (training.recomputes("mlp") && !x.moe())
    bytes += norm_output + double(x.tokens()) * x.ffn * e + mlp_activation_input_bytes(x);
  if (training.recomputes("moe_act") && x.moe()) bytes += double(x.rank_expert_rows()) * x.expert_ffn * e;
  if (training.recomputes("layernorm")) {
    if (x.latent_attention()) bytes += norm_output;
    if (x.moe())
      bytes += double(x.router_tokens()) * x.hidden * x.element_bytes +
               (x.shared_ffn ? double(x.tokens()) * x.hidden * e : 0);
  }
  if (training.recomputes("mla_up_proj") && x.latent_attention())
    bytes += x.qkv_bytes() + double(x.local_tokens()) * x.latent_width() * e;
  return bytes;
}

}  // namespace

// Inputs of qkv, proj, fc1 and fc2 (in an MoE layer: of the router, the
// experts' and the shared experts' linears; with latent attention, also the
// latents its up-projections read, kept sequence-parallel-local as Megatron
// keeps a column-parallel linear's input): what the weight gradients need.
// In fp8 (fp4) training a linear keeps the cast its weight-gradient GEMM
// reads, one copy (Transformer Engine's _Linear.forward saves `inputmat`, the
// cast, for the weight gradient, its column-wise copy only under block
// scaling; module/linear.py): linear_operand_bytes an element; the router, Megatron-Core's own
// GEMM and not TE's, keeps its bf16 input.
double linear_input_bytes(const Shard& x) {
  const double e = x.linear_operand_bytes();
  const double latents = double(x.local_tokens()) * x.latent_width();
  const double qkv_input = double(x.local_tokens()) * x.hidden;
  const double proj_input = double(x.tokens()) * x.o_width();
  if (!x.moe()) return e * (2 * qkv_input + proj_input + double(x.tokens()) * x.ffn + latents);
  const double router_input = double(x.router_tokens()) * x.hidden * x.element_bytes;
  const double rows = double(x.rank_expert_rows());
  const double shared = x.shared_ffn ? double(x.tokens()) * (x.hidden + x.shared_ffn) : 0;
  return e * (qkv_input + proj_input + rows * (x.hidden + x.expert_ffn) + shared + latents) + router_input;
}

// Korthikanti et al. 2022 (sbh(10 + 24/t + 5as/(ht)), 34sbh/t with sequence
// parallelism), generalised to GQA and SwiGLU.
double layer_activation_bytes(const Shard& x, const TrainingConfig& training) {
  const double local_tokens = x.local_tokens();
  const double layer_input = local_tokens * x.hidden * x.element_bytes;
  if (training.recompute == Recompute::full) return layer_input;
  const double norm_inputs = 2 * layer_input + local_tokens * x.latent_width() * x.element_bytes;
  // PyTorch's dropout stores a one-byte mask only where p > 0 (at p = 0 it returns its input).
  const double dropout_masks = x.model.hidden_dropout > 0 ? 2 * local_tokens * x.hidden * kMaskBytes : 0;
  const double qkv_outputs = x.qkv_bytes();
  const double mlp_activation_inputs = mlp_activation_input_bytes(x);
  const bool scores_stored = !training.flash_attention && !training.recomputes("core_attn");
  // Softmax output, and with attention dropout its mask and output.
  const double score_bytes = x.model.attention_dropout > 0 ? 2 * x.element_bytes + kMaskBytes : x.element_bytes;
  const double scores = scores_stored ? double(x.batch) * x.heads * x.seq * x.seq * score_bytes : 0;
  // Fused attention's backward reads its bf16 output, which in fp8 (fp4)
  // training is not the tensor proj keeps (its cast).
  const double quantized_attention_output =
      x.quantized() && training.flash_attention ? double(x.tokens()) * x.o_width() * x.element_bytes : 0;
  return linear_input_bytes(x) + norm_inputs + dropout_masks + qkv_outputs + mlp_activation_inputs + scores +
         quantized_attention_output - recomputed_module_bytes(x, training);
}

}  // namespace simtrain::layers
