#include "sim/model/layers/embedding_ops.hpp"

#include "sim/model/parameter_count.hpp"

namespace simtrain::layers {

UnitWork embedding_work(const Shard& x) {
  const int tables = x.model.learned_position_embeddings ? 2 : 1;
  // Reads a token (and position) row per token, writes their sum.
  const Op lookup = memory_op("embedding", x.tokens() * x.hidden, (tables + 1) * x.element_bytes);
  UnitWork work;
  work.forward.ops = {lookup};
  work.backward_weight.ops = {gradient_of(lookup, "_wgrad")};  // scatter-add into the table gradients
  // Vocab-parallel: every rank writes the whole output, zero outside its rows, then they are summed.
  add_tp_boundary(TpBoundary::leave, 1, x, Linears::megatron, work.forward, work.backward_weight);
  work.parameters = embedding_parameters(x.model, x.tp);
  return work;
}

UnitWork head_work(const Shard& x) {
  const double e = x.element_bytes;
  const Op norm = memory_op("final_norm", x.local_tokens() * x.hidden, 2 * e);
  // fp32 logits read, softmax written for the backward.
  const Op cross_entropy = memory_op("cross_entropy", x.tokens() * x.vocab, 2 * kFp32Bytes);
  UnitWork work;
  // The output layer runs outside Megatron's fp8 (fp4) context: bf16 even in fp8 (fp4) training.
  add_passes({norm, MatMul{"logits", x.tokens(), x.vocab, x.hidden}, cross_entropy}, x, work);
  // The logits gradient is computed even when the weight is tied to the embedding.
  work.backward_weight.ops.push_back(
      memory_op("final_norm_wgrad", int64_t(x.norm_parameters()), kGradAccumulateBytes));
  add_tp_boundary(TpBoundary::enter, 1, x, Linears::megatron, work.forward, work.backward_input);
  // Vocab-parallel cross-entropy: per-token max, sum of exponentials and target logit, in fp32.
  if (x.tp > 1) work.forward.tp.push_back({TaskKind::ALLREDUCE, 1, double(x.tokens()) * kFp32Bytes * 3});
  work.parameters = head_parameters(x.model, x.tp);
  work.weight_grad_activation_bytes = double(x.local_tokens()) * x.hidden * x.element_bytes;
  work.activation_bytes = double(x.tokens()) * x.vocab * kFp32Bytes + work.weight_grad_activation_bytes;
  return work;
}

}  // namespace simtrain::layers
