#include "sim/model/layers/op_builder.hpp"

#include "sim/base/input_error.hpp"
#include "sim/model/layers/moe_ops.hpp"

namespace simtrain::layers {

Shard make_shard(const Scenario& scenario, int64_t tp) {
  const ModelConfig& model = scenario.model;
  const auto split = [&](int64_t count, const std::string& field) {
    if (count % tp != 0)
      throw InputError(scenario.source, "parallel.tensor",
                       std::to_string(tp) + " does not divide model." + field + " (" +
                           std::to_string(count) + ")");
    return count / tp;
  };
  const LinearQuantization quantization = linear_quantization(scenario.training);
  // Latent attention's queries and keys join a part without rotary positions
  // and a rotary one; each head has its own keys and values (num_key_value_heads does not apply).
  const bool latent = model.has_latent_attention();
  Shard shard{
      .model = model,
      .tp = tp,
      .sequence_parallel = scenario.parallel.sequence_parallel && tp > 1,
      .async_tp_allreduce = scenario.parallel.async_tp_allreduce,
      .tp_comm_overlap = scenario.parallel.tp_comm_overlap && scenario.parallel.sequence_parallel && tp > 1,
      .quantization = quantization,
      .batch = scenario.training.micro_batch_size,
      .seq = scenario.training.seq_length / scenario.parallel.context,
      .hidden = model.hidden_size,
      .head_dim = latent ? model.qk_nope_head_dim + model.qk_rope_head_dim : model.head_dim,
      .v_head_dim = latent ? model.v_head_dim : model.head_dim,
      .heads = split(model.num_attention_heads, "num_attention_heads"),
      .kv_heads = split(latent ? model.num_attention_heads : model.num_key_value_heads, "num_key_value_heads"),
      .ffn = split(model.intermediate_size, "intermediate_size"),
      .vocab = (model.vocab_size + tp - 1) / tp,  // Megatron pads the vocabulary to a multiple of tp
      .q_rank = model.q_lora_rank,
      .kv_rank = model.kv_lora_rank,
      .rope_dim = model.qk_rope_head_dim,
      .element_bytes = quantization.quantized() ? kBf16Bytes : dtype_bytes(scenario.training.dtype),
      .cp = scenario.parallel.context,
      .cp_a2a = scenario.parallel.context_a2a(),
      .cp_ring = scenario.parallel.context_ring(),
      .cp_comm_type = scenario.parallel.cp_comm_type,
  };
  if (model.has_experts()) size_experts(scenario, shard);
  return shard;
}

const std::string& step_name(const Step& step) {
  return std::visit([](const auto& s) -> const std::string& { return s.name; }, step);
}

namespace {

// Batched products fold the batch into M, so shape {batch*m, n, k} keeps flops = 2MNK.
// A grouped GEMM (the experts of a rank) is `batch` products of one weight each.
// A linear's GEMM in fp8 (fp4) training reads quantized operands, scales included.
Op gemm(const std::string& name, int64_t batch, int64_t m, int64_t n, int64_t k, double operand_bytes,
        double output_bytes, double counted, bool low_precision_operands, int64_t kernel_streams) {
  const double operands = double(m) * k + double(k) * n;
  const double bytes = batch * (operands * operand_bytes + double(m) * n * output_bytes);
  Op op{name, OpClass::gemm, {batch * m, n, k}, 2.0 * batch * m * n * k * counted, bytes, low_precision_operands};
  if (kernel_streams > 0) {
    op.gemm_groups = batch;
    op.gemm_streams = kernel_streams;
  }
  return op;
}

// TE's casts (sim/model/quantization.hpp): each writes a row-wise copy and,
// for the other GEMM that reads the tensor, a column-wise one (Hopper's fp8
// GEMMs take only the TN layout; block scales run along one dimension).
// A transpose of delayed scaling's row-wise norm output reads and writes fp8.
void add_casts(const Shard& x, const std::string& name, int64_t elements, Pass& pass) {
  const std::vector<Op> casts = cast_ops(x.quantization, name, elements, x.element_bytes);
  pass.ops.insert(pass.ops.end(), casts.begin(), casts.end());
}
Op transpose(const Shard& x, const std::string& name, int64_t elements) {
  return memory_op(name, elements, 2 * x.quantization.copy_bytes_per_element());
}

// The GEMM of a product: quantized operands for a linear in fp8 (fp4) training.
Op product(const Shard& x, const MatMul& mm, const std::string& name, int64_t m, int64_t n, int64_t k) {
  const double operand_bytes = mm.quantized ? x.linear_operand_bytes() : x.element_bytes;
  return gemm(name, mm.batch, m, n, k, operand_bytes, x.element_bytes, mm.counted, mm.quantized, mm.kernel_streams);
}

// Y = X·B gives dX = dY·Bᵀ {m,k,n} and dB = Xᵀ·dY {k,n,m}; dB is a weight
// gradient only when B is a weight. In fp8 (fp4) dY is cast first; delayed
// scaling's fp8 norm output has no transposed copy yet (sequence parallelism
// gathers it row-wise), so the weight gradient transposes it.
void add_backward(const Step& step, const Shard& x, Pass& input_grads, Pass& weight_grads) {
  const auto* mm = std::get_if<MatMul>(&step);
  if (!mm) {
    input_grads.ops.push_back(gradient_of(std::get<Op>(step), "_grad"));
    return;
  }
  if (mm->quantized) add_casts(x, mm->name + "_grad_cast", mm->batch * mm->m * mm->n, input_grads);
  input_grads.ops.push_back(product(x, *mm, mm->name + "_dgrad", mm->m, mm->k, mm->n));
  Pass& rhs_grads = mm->rhs_is_weight ? weight_grads : input_grads;
  if (mm->quantized && mm->input_from_norm)
    rhs_grads.ops.push_back(transpose(x, mm->name + "_input_transpose", mm->batch * mm->m * mm->k));
  rhs_grads.ops.push_back(product(x, *mm, mm->name + (mm->rhs_is_weight ? "_wgrad" : "_dgrad_rhs"), mm->k, mm->n, mm->m));
}

}  // namespace

MatMul layer_linear(const Shard& x, const std::string& name, int64_t rows, int64_t n, int64_t k, bool input_from_norm) {
  return MatMul{name, rows, n, k, 1, true, x.quantized(), x.quantization.norm_quantizes && input_from_norm};
}

// In fp8 with delayed scaling, TE's norm writes its output quantized for
// the linear after it (current scaling needs the output's amax first, block
// scaling its blocks: bf16, then a cast); its backward (twice the bytes: x
// and dy read, dx written) is bf16 still.
Op linear_input_norm(const Shard& x, const std::string& name) {
  const double e = x.element_bytes;
  return memory_op(name, x.local_tokens() * x.hidden, e + (x.quantization.norm_quantizes ? x.linear_operand_bytes() : e));
}

Op memory_op(const std::string& name, int64_t elements, double bytes_per_element) {
  return {name, OpClass::memory_bound, {elements}, 0, double(elements) * bytes_per_element};
}

// Fused attention's backward runs 2.5 times the forward's FLOPs (the
// recomputed scores; flash-attention's benchmarks count bwd = 2.5 fwd).
Op gradient_of(const Op& forward, const std::string& suffix) {
  Op grad = forward;
  grad.name += suffix;
  grad.flops *= 2;
  grad.bytes *= 2;
  if (forward.op_class == OpClass::attention) grad.uncounted_flops = kAttentionBackwardRecomputedShare * grad.flops;
  return grad;
}

void add_forward(const Step& step, const Shard& x, Pass& forward) {
  const auto* mm = std::get_if<MatMul>(&step);
  if (!mm) {
    forward.ops.push_back(std::get<Op>(step));
    return;
  }
  if (mm->quantized && !mm->input_from_norm) add_casts(x, mm->name + "_input_cast", mm->batch * mm->m * mm->k, forward);
  forward.ops.push_back(product(x, *mm, mm->name, mm->m, mm->n, mm->k));
}

void add_passes(const std::vector<Step>& steps, const Shard& x, UnitWork& work) {
  for (const Step& step : steps) add_forward(step, x, work.forward);
  for (auto step = steps.rbegin(); step != steps.rend(); ++step)
    add_backward(*step, x, work.backward_input, work.backward_weight);
}

// Under SP a column-parallel linear keeps only its local input, so its
// backward gathers it again for the weight gradient, overlapped with the
// input-gradient GEMM (Megatron's
// LinearWithGradAccumulationAndAsyncCommunication.backward, TE's
// _LayerNormLinear.backward), and its input gradient is reduced (all-reduced,
// SP: reduce-scattered) beside its weight-gradient GEMM, the all-reduce only
// where async_tensor_model_parallel_allreduce is on. Reductions carry bf16; TE's fp8 (fp4) linears
// all-gather their quantized input, scales included, and dY quantized before its gather.
// Under tp_comm_overlap TE's userbuffers run the rest beside the linears'
// GEMMs too, in chunks: the gather of a column-parallel linear's input
// before its forward GEMM (qkv_fprop, fc1_fprop), the reduce-scatter of a
// row-parallel linear's output after it (proj_fprop, fc2_fprop) and the
// gather of that output's gradient before its input-gradient GEMM
// (proj_dgrad, fc2_dgrad). The tensor crossing is `width` wide per token (the
// hidden size but in latent attention); one that no linear reads (its rotary
// key) is gathered in bf16, without userbuffers, and not again for a weight gradient.
void add_tp_boundary_of_width(TpBoundary boundary, int count, int64_t width, const Shard& x, Linears linears,
                              Pass& forward, Pass& backward, bool linear_input) {
  if (x.tp == 1 || count == 0) return;
  const bool te_linear = linears == Linears::transformer_engine && linear_input;
  const bool userbuffers = te_linear && x.tp_comm_overlap;
  const double reduced_bytes = double(x.tokens()) * width * x.element_bytes;
  const double gathered_bytes = double(x.tokens()) * width * (te_linear ? x.linear_operand_bytes() : x.element_bytes);
  Pass& reducing = boundary == TpBoundary::enter ? backward : forward;
  Pass& gathering = boundary == TpBoundary::enter ? forward : backward;
  TpCollectives reduction{x.sequence_parallel ? TaskKind::REDUCESCATTER : TaskKind::ALLREDUCE, count, reduced_bytes};
  reduction.overlapped = userbuffers && boundary == TpBoundary::leave;
  reduction.beside_weight_gradient =
      boundary == TpBoundary::enter && linear_input && (x.sequence_parallel || x.async_tp_allreduce);
  reducing.tp.push_back(reduction);
  if (!x.sequence_parallel) return;
  gathering.tp.push_back({TaskKind::ALLGATHER, count, gathered_bytes, userbuffers});
  if (boundary == TpBoundary::enter && linear_input)
    backward.tp.push_back({TaskKind::ALLGATHER, count, gathered_bytes, true});
}

void add_tp_boundary(TpBoundary boundary, int count, const Shard& x, Linears linears, Pass& forward, Pass& backward) {
  add_tp_boundary_of_width(boundary, count, x.hidden, x, linears, forward, backward);
}

}  // namespace simtrain::layers
