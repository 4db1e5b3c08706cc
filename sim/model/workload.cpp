#include "sim/model/workload.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <variant>

#include "sim/base/input_error.hpp"
#include "sim/model/parameter_count.hpp"
#include "sim/model/partition.hpp"
#include "sim/model/quantization.hpp"

namespace simtrain {

std::string to_string(OpClass op_class) {
  switch (op_class) {
    case OpClass::gemm: return "gemm";
    case OpClass::attention: return "attention";
    case OpClass::memory_bound: return "memory_bound";
    case OpClass::optimizer: return "optimizer";
  }
  return "unknown";
}

Dtype op_dtype(const Op& op, Dtype training) {
  const bool low_precision = training == Dtype::fp8 || training == Dtype::fp4;
  if (op.low_precision_operands) return training;
  return low_precision ? Dtype::bf16 : training;
}

double total_flops(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) total += op.flops;
  return total;
}

double total_bytes(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) total += op.bytes;
  return total;
}

double Pass::flops() const { return total_flops(ops); }
double Pass::bytes() const { return total_bytes(ops); }

namespace {

constexpr double kMaskBytes = 1;         // dropout masks are stored as bytes
constexpr double kBf16Bytes = 2;
constexpr double kFp32Bytes = 4;
constexpr double kGradAccumulateBytes = 8;  // read + write of an fp32 main-grad element

// One TP rank's share of the model, for one micro-batch.
struct Shard {
  const ModelConfig& model;
  int64_t tp = 1;
  bool sequence_parallel = false;
  bool async_tp_allreduce = true;  // without SP: the input gradient's all-reduce beside the weight-gradient GEMM
  bool tp_comm_overlap = false;  // SP's collectives around TE's linears beside their GEMMs (userbuffers)
  LinearQuantization quantization;  // fp8 (fp4) training: how the layers' linears cast their operands
  int64_t batch = 0, seq = 0, hidden = 0, head_dim = 0;  // seq: the rank's tokens of each sequence (over CP); head_dim: of queries and keys
  int64_t v_head_dim = 0;  // of values and the attention's output: head_dim but in latent attention
  int64_t heads = 0, kv_heads = 0, ffn = 0, vocab = 0;  // this rank's share
  // Multi-head latent attention (kv_rank 0: a fused qkv projection): the
  // widths of the query and key-value latents and of the rotary key all heads share.
  int64_t q_rank = 0, kv_rank = 0, rope_dim = 0;
  double element_bytes = 0;  // e: activations, their HBM traffic and messages (bf16 in fp8 and fp4 training too)
  // Mixture of experts (local_experts 0: a dense MLP of ffn). Each expert is
  // sharded over the TP ranks (expert_tensor_parallel_size = TP).
  int64_t ep = 1, local_experts = 0, top_k = 0;
  int64_t expert_ffn = 0, shared_ffn = 0;  // this rank's share of one routed expert's and of the shared experts' width
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  // Rows (token copies) each local expert of the busiest EP rank runs, as the
  // grouped GEMM's shape spreads them, and the fraction of them Megatron counts
  // (the mean's): the busiest rank bounds the layer's time, the mean its FLOPs.
  int64_t expert_rows = 0;
  double counted_expert_rows = 1;
  // Context parallelism: each sequence split over `cp` ranks, `seq` tokens
  // each; all-to-alls over `cp_a2a` of them trade the sequence split for a
  // split of the heads, and the K/V is exchanged over the `cp_ring` others
  // (ParallelConfig::context_a2a, context_ring).
  int64_t cp = 1, cp_a2a = 1, cp_ring = 1;
  CpCommType cp_comm_type = CpCommType::p2p;

  int64_t tokens() const { return batch * seq; }
  // Rows of the norms, dropouts and residual adds: sequence parallelism splits them.
  int64_t local_tokens() const { return sequence_parallel ? tokens() / tp : tokens(); }
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }
  int64_t v_width() const { return kv_heads * v_head_dim; }
  int64_t o_width() const { return heads * v_head_dim; }  // the attention's output: the proj linear's input
  bool latent_attention() const { return kv_rank > 0; }
  int64_t latent_width() const { return q_rank + kv_rank; }  // what latent attention's up-projections read, per token
  int64_t fc1_width() const { return (model.gated_mlp ? 2 : 1) * ffn; }  // SwiGLU fuses gate and up
  // The full activation, in bf16: the size of the TP collectives around a layer
  // (but fp8 and fp4 all-gathers) and of pipeline messages.
  double activation_tensor_bytes() const { return double(tokens()) * hidden * element_bytes; }
  // What the layers' linears read per operand element (one quantized copy:
  // data and block scales), and what sequence parallelism all-gathers for
  // them: TE quantizes before gathering.
  bool quantized() const { return quantization.quantized(); }
  double linear_operand_bytes() const { return quantized() ? quantization.copy_bytes_per_element() : element_bytes; }
  double norm_parameters() const { return (model.rms_norm ? 1 : 2) * double(hidden); }
  bool moe() const { return local_experts > 0; }
  // Tokens entering the router: the SP-local ones (the TP ranks then gather the routed rows).
  int64_t router_tokens() const { return local_tokens(); }
  int64_t rank_expert_rows() const { return local_experts * expert_rows; }  // after the TP gather
  int64_t expert_fc1_width() const { return (model.gated_mlp ? 2 : 1) * expert_ffn; }
  int64_t shared_fc1_width() const { return (model.gated_mlp ? 2 : 1) * shared_ffn; }
  // The rank's keys and values (this TP rank's heads, its CP share of the
  // tokens): what one hop of the ring attention passes on.
  double kv_chunk_bytes() const { return 2.0 * double(tokens()) * kv_width() * element_bytes; }
  // The rank's Q, K, V and attention output (its tokens, its TP rank's heads):
  // what attention reads and writes, and what Ulysses (a2a) exchanges around it.
  double qkv_bytes() const { return double(tokens()) * (q_width() + kv_width() + v_width()) * element_bytes; }
  double attention_output_bytes() const { return double(tokens()) * o_width() * element_bytes; }
};

// The rows the busiest EP rank's experts receive per micro-batch: each of its
// local experts the mean (the EP group's tokens x top-k over the experts),
// one of them moe_load_imbalance times it, each capped at capacity_factor
// times the mean (dropped beyond it); spread over its experts for the grouped
// GEMM's shape.
void size_experts(const Scenario& scenario, Shard& x) {
  const ModelConfig& m = scenario.model;
  const TrainingConfig& t = scenario.training;
  x.ep = scenario.parallel.expert;
  x.local_experts = m.num_experts / x.ep;
  x.top_k = m.experts_per_token;
  x.expert_ffn = m.moe_intermediate_size / x.tp;
  const int64_t shared_width = m.shared_experts * m.moe_intermediate_size + m.shared_expert_intermediate_size;
  x.shared_ffn = shared_width / x.tp;
  x.dispatcher = scenario.parallel.moe_dispatcher;
  const double mean = double(x.ep) * double(x.tokens()) * double(x.top_k) / double(m.num_experts);
  const double cap = t.capacity_factor > 0 ? t.capacity_factor : std::numeric_limits<double>::infinity();
  const double rank_rows =
      mean * (double(x.local_experts - 1) * std::min(1.0, cap) + std::min(t.moe_load_imbalance, cap));
  x.expert_rows = std::max<int64_t>(1, int64_t(std::ceil(rank_rows / double(x.local_experts))));
  x.counted_expert_rows = mean / double(x.expert_rows);
}

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

// Y[m,n] = X[m,k] · B[k,n], `batch` times. B is a weight for the linear layers
// and an activation for attention's score and context products.
struct MatMul {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  bool rhs_is_weight = true;
  // fp8 (fp4) training, a layer's linear: operands cast by TE (the output stays bf16).
  bool quantized = false;
  bool input_from_norm = false;  // quantized: the norm before it writes its input quantized already
  double counted = 1;  // the fraction of its FLOPs Megatron counts (the busiest rank's experts run more)
};

// Anything else: attention kernels and memory-bound ops, built as finished Ops.
using Step = std::variant<MatMul, Op>;

// Batched products fold the batch into M, so shape {batch*m, n, k} keeps flops = 2MNK.
// A grouped GEMM (the experts of a rank) is `batch` products of one weight each.
// A linear's GEMM in fp8 (fp4) training reads quantized operands, scales included.
Op gemm(const std::string& name, int64_t batch, int64_t m, int64_t n, int64_t k, double operand_bytes,
        double output_bytes, double counted = 1, bool low_precision_operands = false) {
  const double operands = double(m) * k + double(k) * n;
  const double bytes = batch * (operands * operand_bytes + double(m) * n * output_bytes);
  return {name, OpClass::gemm, {batch * m, n, k}, 2.0 * batch * m * n * k * counted, bytes, low_precision_operands};
}

// Memory-bound ops carry no FLOPs: their time is HBM traffic, and Megatron's
// FLOP counts (hence MFU and the step totals) cover only GEMMs and attention.
Op memory_op(const std::string& name, int64_t elements, double bytes_per_element) {
  return {name, OpClass::memory_bound, {elements}, 0, double(elements) * bytes_per_element};
}

// Backward of a non-GEMM op: about twice its forward FLOPs and traffic.
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
  return gemm(name, mm.batch, m, n, k, operand_bytes, x.element_bytes, mm.counted, mm.quantized);
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

// Forward in order; backward in reverse, split into input and weight gradients.
void add_passes(const std::vector<Step>& steps, const Shard& x, UnitWork& work) {
  for (const Step& step : steps) add_forward(step, x, work.forward);
  for (auto step = steps.rbegin(); step != steps.rend(); ++step)
    add_backward(*step, x, work.backward_input, work.backward_weight);
}

// Megatron's conjugate TP operators: entering a column-parallel region is an
// identity (SP: allgather) forward and an allreduce (SP: reducescatter)
// backward; leaving a row-parallel region is the reverse. Under SP a
// column-parallel linear keeps only its local input, so its backward gathers
// it again for the weight gradient, overlapped with the input-gradient GEMM
// (Megatron's LinearWithGradAccumulationAndAsyncCommunication.backward, TE's
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
enum class TpBoundary { enter, leave };

// Whose linears a boundary's collectives serve: the layers' are Transformer
// Engine's (quantized operands in fp8 and fp4 training, userbuffers under tp_comm_overlap);
// the vocabulary-parallel embedding and output layer are Megatron's own (bf16, NCCL).
enum class Linears { transformer_engine, megatron };

void add_tp_boundary_of_width(TpBoundary boundary, int count, int64_t width, const Shard& x, Linears linears,
                              Pass& forward, Pass& backward, bool linear_input = true) {
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

// ---- Transformer layer ----

std::vector<Step> attention_core(const Shard& x, bool flash_attention) {
  const double e = x.element_bytes;
  if (flash_attention) {
    // Megatron counts the full (non-causal) s×s products: 4·b·s²·h/t, or
    // 2·b·s²·heads·(qk + v head dims)/t where values are narrower (latent attention).
    const double flops = 2.0 * x.batch * x.seq * x.seq * (x.q_width() + x.o_width());
    const double bytes = x.qkv_bytes() + x.attention_output_bytes();  // read q, k, v; write o
    // With context parallelism, one block per K/V chunk of the ring. Under
    // causal load balancing every block is the work of a causal attention
    // over the chunk's tokens: the diagonal block is one, the others are
    // full blocks of half its size (both chunks of Q against the earlier
    // chunk of K/V, or the later chunk of Q against both), so each rank runs
    // 1/CP of the whole causal attention. all_gather runs the same products
    // against the gathered K/V. The all-to-alls (a2a, a2a+p2p's inner group)
    // leave a rank cp_a2a times the tokens with 1/cp_a2a of the heads: each
    // block cp_a2a times the products, the same bytes. So p2p runs CP blocks
    // of seq/CP tokens, a2a one over the whole sequence, a2a+p2p B of seq/B.
    const Op block{"attn", OpClass::attention, {x.batch, x.heads / x.cp_a2a, x.seq * x.cp_a2a, x.head_dim},
                   flops * double(x.cp_a2a), bytes};
    return std::vector<Step>(x.cp_ring, block);
  }
  const int64_t heads_batch = x.batch * x.heads;
  const int64_t scores = heads_batch * x.seq * x.seq;
  return {
      MatMul{"attn_scores", x.seq, x.seq, x.head_dim, heads_batch, false},
      memory_op("softmax", scores, 2 * e),  // scale, mask and softmax fused
      memory_op("attn_dropout", scores, 2 * e + kMaskBytes),
      MatMul{"attn_context", x.seq, x.v_head_dim, x.seq, heads_batch, false},
  };
}

// Multi-head latent attention's projections from the normed input to the
// heads' queries, keys and values (DeepSeek-V2 report, section 2.1;
// Megatron-Core's MLASelfAttention): down-projections to the query latent
// and to the key-value latent with the rotary key all heads share, each
// replicated over TP (Megatron-Core's "duplicated" linears, on the
// sequence-parallel rank's own tokens), the latents normed, then
// column-parallel up-projections to this rank's heads (keys without their
// rotary part, and values). Without a query latent (q_lora_rank 0) one
// column-parallel query projection.
std::vector<Step> latent_attention_projections(const Shard& x, bool norm_quantizes) {
  const double e = x.element_bytes;
  const int64_t local = x.local_tokens();
  const auto linear = [&](const std::string& name, int64_t rows, int64_t n, int64_t k, bool input_from_norm) {
    return MatMul{name, rows, n, k, 1, true, x.quantized(), norm_quantizes && input_from_norm};
  };
  std::vector<Step> steps;
  if (x.q_rank)
    steps = {linear("q_down", local, x.q_rank, x.hidden, true), memory_op("q_norm", local * x.q_rank, 2 * e),
             linear("q_up", x.tokens(), x.q_width(), x.q_rank, false)};
  else
    steps = {linear("q_proj", x.tokens(), x.q_width(), x.hidden, true)};
  const int64_t kv_up_width = x.heads * (x.head_dim - x.rope_dim + x.v_head_dim);
  steps.insert(steps.end(), {linear("kv_down", local, x.kv_rank + x.rope_dim, x.hidden, true),
                             memory_op("kv_norm", local * x.kv_rank, 2 * e),
                             linear("kv_up", x.tokens(), kv_up_width, x.kv_rank, false)});
  return steps;
}

// Latent attention across TP: the up-projections enter the column-parallel
// region from the latents (the query's from the layer input without a
// query latent), and the rotary key crosses it too (every rank's heads read
// it; sequence parallelism gathers it). The proj linear leaves it as usual.
void add_latent_attention_collectives(const Shard& x, Pass& forward, Pass& backward) {
  add_tp_boundary_of_width(TpBoundary::enter, 1, x.q_rank ? x.q_rank : x.hidden, x, Linears::transformer_engine,
                           forward, backward);
  add_tp_boundary_of_width(TpBoundary::enter, 1, x.kv_rank, x, Linears::transformer_engine, forward, backward);
  add_tp_boundary_of_width(TpBoundary::enter, 1, x.rope_dim, x, Linears::transformer_engine, forward, backward, false);
}

// The MLP's activation over `elements`: SwiGLU reads gate and up and writes one, GELU reads one and writes one.
Op activation_op(const Shard& x, const std::string& prefix, int64_t elements) {
  const double e = x.element_bytes;
  return x.model.gated_mlp ? memory_op(prefix + "swiglu", elements, 3 * e) : memory_op(prefix + "gelu", elements, 2 * e);
}

// Rows one TP rank sends and receives in the EP exchange: the busiest rank's,
// before sequence parallelism's TP gather multiplies them.
int64_t exchanged_rows(const Shard& x) { return x.rank_expert_rows() / (x.sequence_parallel ? x.tp : 1); }

// An MoE layer's MLP as Megatron-Core's MoELayer runs it: the router (a bf16
// GEMM to one logit per expert, softmax and top-k), the tokens permuted into
// expert order (and, from several ranks, sorted by local expert), the routed
// experts as grouped GEMMs over the busiest rank's rows, the outputs put back
// in token order and summed with their router weights; shared experts a
// dense MLP beside them. The exchanges between are collectives (add_moe_collectives).
std::vector<Step> moe_steps(const Shard& x) {
  const double e = x.element_bytes;
  const int64_t tokens = x.router_tokens(), routed = tokens * x.top_k, experts = x.model.num_experts;
  const auto expert_linear = [&](const std::string& name, int64_t n, int64_t k) {
    return MatMul{name, x.expert_rows, n, k, x.local_experts, true, x.quantized(), false, x.counted_expert_rows};
  };
  const bool sorts = x.ep > 1 && x.local_experts > 1;
  const int64_t received = exchanged_rows(x) * x.hidden;
  std::vector<Step> steps = {MatMul{"router", tokens, experts, x.hidden}, memory_op("router_topk", tokens * experts, 2 * e),
                             memory_op("moe_permute", routed * x.hidden, 2 * e)};
  if (sorts) steps.push_back(memory_op("moe_sort_chunks", received, 2 * e));
  steps.insert(steps.end(), {expert_linear("expert_fc1", x.expert_fc1_width(), x.hidden),
                             activation_op(x, "expert_", x.rank_expert_rows() * x.expert_ffn),
                             expert_linear("expert_fc2", x.hidden, x.expert_ffn)});
  if (sorts) steps.push_back(memory_op("moe_unsort_chunks", received, 2 * e));
  // Reads top-k rows per token, writes one.
  steps.push_back(memory_op("moe_unpermute", routed * x.hidden, e * (1 + 1.0 / double(x.top_k))));
  if (x.shared_ffn == 0) return steps;
  const auto shared_linear = [&](const std::string& name, int64_t n, int64_t k) {
    return MatMul{name, x.tokens(), n, k, 1, true, x.quantized(), false};
  };
  steps.insert(steps.end(), {shared_linear("shared_fc1", x.shared_fc1_width(), x.hidden),
                             activation_op(x, "shared_", x.tokens() * x.shared_ffn),
                             shared_linear("shared_fc2", x.hidden, x.shared_ffn)});
  return steps;
}

// The token exchange around the experts. Over EP: all-to-all dispatch and
// combine (each the busiest rank's rows), or the allgather dispatcher's
// gather of every rank's tokens and reduce-scatter of the outputs; the
// backward runs the same exchanges the other way. Over TP (experts sharded
// like a dense MLP): sequence parallelism's gather of the received rows and
// reduce-scatter of the outputs, or the all-reduces of a row-parallel output
// and of a column-parallel input's gradient; shared experts cross TP as a dense MLP.
void add_moe_collectives(const Shard& x, Pass& forward, Pass& backward) {
  const double row_bytes = double(x.hidden) * x.element_bytes;
  if (x.ep > 1) {
    for (Pass* pass : {&forward, &backward}) {
      if (x.dispatcher == MoeDispatcher::alltoall) {
        pass->tp.push_back({TaskKind::ALLTOALL, 2, double(exchanged_rows(x)) * row_bytes, false, LayerGroup::expert});
      } else {
        const double gathered = double(x.ep) * double(x.router_tokens()) * row_bytes;
        pass->tp.push_back({TaskKind::ALLGATHER, 1, gathered, false, LayerGroup::expert});
        pass->tp.push_back({TaskKind::REDUCESCATTER, 1, gathered, false, LayerGroup::expert});
      }
    }
  }
  if (x.tp > 1) {
    const double rows_bytes = double(x.rank_expert_rows()) * row_bytes;
    for (Pass* pass : {&forward, &backward}) {
      if (x.sequence_parallel) {
        pass->tp.push_back({TaskKind::ALLGATHER, 1, rows_bytes});
        pass->tp.push_back({TaskKind::REDUCESCATTER, 1, rows_bytes});
      } else {
        pass->tp.push_back({TaskKind::ALLREDUCE, 1, rows_bytes});
      }
    }
  }
  if (x.shared_ffn == 0) return;
  add_tp_boundary(TpBoundary::enter, 1, x, Linears::transformer_engine, forward, backward);
  add_tp_boundary(TpBoundary::leave, 1, x, Linears::transformer_engine, forward, backward);
}

// Context parallelism's exchanges per layer. Over the ring group (the CP
// group but in a2a+p2p: its outer group of B ranks), the K/V exchange. p2p:
// the ring attention's hops of each rank's K/V chunk forward, and of K/V and
// dK/dV backward, each hop beside an attention block (the traffic of a ring
// all-gather, and of a ring reduce-scatter for dK/dV, run beside the pass).
// After a2a+p2p's all-to-alls a chunk holds B times the tokens of 1/A of the
// K/V heads: the same bytes. all_gather: the K/V of the whole sequence
// gathered before attention (and again for the backward), dK/dV
// reduce-scattered after it, blocking. Over the all-to-all group (the CP
// group for a2a, the inner group of A ranks for a2a+p2p; Transformer
// Engine's AttnFuncWithCPAndQKVOA2A and AttnFuncWithCPAndKVP2P with two
// groups): blocking all-to-alls of the rank's tensors, each rank sending what
// the others' heads need: Q, K, V before attention and its output after it;
// backward, the output with its gradient before, then dQ, dK, dV after (as
// Transformer Engine did: a2a until 25252e9, a2a+p2p until ee5dcec; it now
// keeps the output unexchanged and sends dO alone).
void add_cp_exchange(const Shard& x, Pass& pass, bool gradients) {
  if (x.cp_a2a > 1) {
    const double before = gradients ? 2 * x.attention_output_bytes() : x.qkv_bytes();
    pass.tp.push_back({TaskKind::ALLTOALL, 1, before, false, LayerGroup::context_a2a});
  }
  if (x.cp_ring > 1) {
    const double gathered = double(x.cp_ring) * x.kv_chunk_bytes();
    const bool overlapped = x.cp_comm_type != CpCommType::all_gather;
    pass.tp.push_back({TaskKind::ALLGATHER, 1, gathered, overlapped, LayerGroup::context_ring});
    if (gradients) pass.tp.push_back({TaskKind::REDUCESCATTER, 1, gathered, overlapped, LayerGroup::context_ring});
  }
  if (x.cp_a2a > 1) {
    const double after = gradients ? x.qkv_bytes() : x.attention_output_bytes();
    pass.tp.push_back({TaskKind::ALLTOALL, 1, after, false, LayerGroup::context_a2a});
  }
}

// What the exchanges hold while one layer's attention runs, each part's
// together (a2a+p2p holds both): the all-to-alls' backward, the output and
// its gradient received and dQ, dK, dV to send; p2p's double buffers (the
// chunk being sent and the one arriving), of K/V forward and of K/V with
// dK/dV backward; all_gather's gathered K/V and dK/dV.
double cp_exchange_buffer_bytes(const Shard& x) {
  const double all_to_all = x.cp_a2a > 1 ? 2 * x.attention_output_bytes() + x.qkv_bytes() : 0;
  if (x.cp_ring == 1) return all_to_all;
  const double chunks = x.cp_comm_type == CpCommType::all_gather ? 2 * double(x.cp) : 2 * 2;
  return all_to_all + chunks * x.kv_chunk_bytes();
}

std::vector<Step> layer_steps(const Shard& x, const std::vector<Step>& core) {
  const double e = x.element_bytes;
  const int64_t residual = x.local_tokens() * x.hidden;
  // In fp8 with delayed scaling, TE's norm writes its output quantized for
  // the linear after it (current scaling needs the output's amax first, block
  // scaling its blocks: bf16, then a cast); its backward (twice the bytes: x
  // and dy read, dx written) is bf16 still.
  const bool norm_quantizes = x.quantization.norm_quantizes;
  const Op norm = memory_op("ln1", residual, e + (norm_quantizes ? x.linear_operand_bytes() : e));
  // Residual add reads two tensors and writes one, plus the dropout mask.
  const Op bias_dropout_add = memory_op("bias_dropout_add", residual, 3 * e + kMaskBytes);
  const auto linear = [&](const std::string& name, int64_t n, int64_t k, bool input_from_norm) {
    return MatMul{name, x.tokens(), n, k, 1, true, x.quantized(), norm_quantizes && input_from_norm};
  };

  std::vector<Step> steps = {norm};
  if (x.latent_attention()) {
    const std::vector<Step> projections = latent_attention_projections(x, norm_quantizes);
    steps.insert(steps.end(), projections.begin(), projections.end());
  } else {
    steps.push_back(linear("qkv", x.q_width() + 2 * x.kv_width(), x.hidden, true));
  }
  steps.insert(steps.end(), core.begin(), core.end());
  steps.insert(steps.end(), {linear("proj", x.hidden, x.o_width(), false), bias_dropout_add});
  if (x.moe()) {
    steps.push_back(memory_op("ln2", residual, 2 * e));  // the router reads it in bf16
    const std::vector<Step> moe = moe_steps(x);
    steps.insert(steps.end(), moe.begin(), moe.end());
  } else {
    Op norm2 = norm;
    norm2.name = "ln2";
    steps.insert(steps.end(), {norm2, linear("fc1", x.fc1_width(), x.hidden, true), activation_op(x, "", x.tokens() * x.ffn),
                               linear("fc2", x.hidden, x.ffn, false)});
  }
  steps.push_back(bias_dropout_add);
  return steps;
}

// Latent attention's norms of its latents, replicated over TP.
double latent_norm_parameters(const Shard& x) { return (x.model.rms_norm ? 1 : 2) * double(x.latent_width()); }

// Norm weights and biases; the row-parallel (proj, fc2) biases and the norms are replicated over TP.
// (Latent attention is read without biases.)
double layer_vector_parameters(const Shard& x) {
  if (!x.model.linear_bias) return 2 * x.norm_parameters() + latent_norm_parameters(x);
  const double attention_biases = double(x.q_width() + 2 * x.kv_width()) + x.hidden;
  if (!x.moe()) return attention_biases + x.fc1_width() + x.hidden + 2 * x.norm_parameters();
  const double shared_biases = x.shared_ffn ? double(x.shared_fc1_width()) + x.hidden : 0;
  return attention_biases + shared_biases + 2 * x.norm_parameters();
}

// A routed expert's weights (and biases) on one TP rank.
double expert_parameters(const Shard& x) {
  const double h = x.hidden, biases = x.model.linear_bias ? double(x.expert_fc1_width()) + h : 0;
  return h * x.expert_fc1_width() + double(x.expert_ffn) * h + biases;
}

// Of an MoE layer, outside the linears: the router, and Qwen2-MoE's gate of
// its shared expert (hidden -> 1), replicated over TP.
double router_parameters(const Shard& x) {
  const double h = x.hidden;
  return h * x.model.num_experts + (x.model.shared_expert_intermediate_size ? h : 0);
}

// The attention's linears on one TP rank: qkv, or latent attention's
// projections (latent_attention_projections; the down-projections whole on
// every rank), then proj.
double attention_linear_weights(const Shard& x) {
  const double h = x.hidden;
  if (!x.latent_attention()) return h * (x.q_width() + 2 * x.kv_width()) + double(x.o_width()) * h;
  const double query = x.q_rank ? h * x.q_rank + double(x.q_rank) * x.q_width() : h * x.q_width();
  const double key_value =
      h * double(x.kv_rank + x.rope_dim) + double(x.kv_rank) * x.heads * (x.head_dim - x.rope_dim + x.v_head_dim);
  return query + key_value + double(x.o_width()) * h;
}

double layer_linear_weights(const Shard& x) {
  const double h = x.hidden;
  if (!x.moe()) return attention_linear_weights(x) + h * x.fc1_width() + double(x.ffn) * h;
  const double shared = h * x.shared_fc1_width() + double(x.shared_ffn) * h;
  return attention_linear_weights(x) + shared +
         double(x.local_experts) * (h * x.expert_fc1_width() + double(x.expert_ffn) * h);
}

double layer_expert_parameters(const Shard& x) { return x.moe() ? double(x.local_experts) * expert_parameters(x) : 0; }

double layer_parameters(const Shard& x) {
  if (!x.moe()) return layer_linear_weights(x) + layer_vector_parameters(x);
  const double expert_biases = x.model.linear_bias ? double(x.local_experts) * (x.expert_fc1_width() + x.hidden) : 0;
  return layer_linear_weights(x) + layer_vector_parameters(x) + expert_biases + router_parameters(x);
}

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

// What the MLP's activation (and an MoE layer's weighted sum of expert
// outputs and its router probabilities, fp32) needs in the backward.
double mlp_activation_input_bytes(const Shard& x) {
  if (!x.moe()) return double(x.tokens()) * x.fc1_width() * x.element_bytes;
  const double rows = double(x.rank_expert_rows());
  const double probabilities = double(x.router_tokens()) * x.model.num_experts * kFp32Bytes;
  return (rows * (x.expert_fc1_width() + x.hidden) + double(x.tokens()) * x.shared_fc1_width()) * x.element_bytes +
         probabilities;
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

// The name of a step's op or GEMM.
const std::string& step_name(const Step& step) {
  return std::visit([](const auto& s) -> const std::string& { return s.name; }, step);
}

// What selective recompute runs again before the backward: its modules'
// ops (recomputed_module_bytes says which), with the collectives they issue.
Pass selective_recompute(const Shard& x, const TrainingConfig& training, const std::vector<Step>& steps,
                         const std::vector<Step>& core) {
  Pass pass, unused;
  const auto rerun = [&](const std::vector<std::string>& names) {
    for (const Step& step : steps)
      if (std::find(names.begin(), names.end(), step_name(step)) != names.end()) add_forward(step, x, pass);
  };
  if (training.recomputes("core_attn")) {
    for (const Step& step : core) add_forward(step, x, pass);
    add_cp_exchange(x, pass, false);  // recomputed attention gathers K/V again
  }
  if (training.recomputes("layernorm")) {
    if (x.latent_attention()) rerun({"ln1"});
    if (x.moe()) rerun({"ln2"});
  }
  if (training.recomputes("mla_up_proj") && x.latent_attention()) {
    rerun({"q_up", "q_proj", "kv_up"});
    add_latent_attention_collectives(x, pass, unused);
  }
  if (training.recomputes("mlp") && !x.moe()) {
    rerun({"ln2", "fc1", "swiglu", "gelu", "fc2"});
    add_tp_boundary(TpBoundary::enter, 1, x, Linears::transformer_engine, pass, unused);
    add_tp_boundary(TpBoundary::leave, 1, x, Linears::transformer_engine, pass, unused);
  }
  if (training.recomputes("moe_act") && x.moe()) rerun({"expert_swiglu", "expert_gelu"});
  return pass;
}

UnitWork layer_work(const Shard& x, const TrainingConfig& training) {
  const std::vector<Step> core = attention_core(x, training.flash_attention);
  const std::vector<Step> steps = layer_steps(x, core);
  UnitWork work;
  add_passes(steps, x, work);
  const double vector_parameters = layer_vector_parameters(x);
  work.backward_weight.ops.push_back(
      memory_op("norm_bias_wgrad", int64_t(vector_parameters), kGradAccumulateBytes));
  // qkv (latent attention's projections: below) and proj; a dense MLP's fc1 and fc2.
  const int dense_mlp = x.moe() ? 0 : 1;
  add_tp_boundary(TpBoundary::enter, (x.latent_attention() ? 0 : 1) + dense_mlp, x, Linears::transformer_engine,
                  work.forward, work.backward_input);
  add_tp_boundary(TpBoundary::leave, 1 + dense_mlp, x, Linears::transformer_engine, work.forward, work.backward_input);
  if (x.latent_attention()) add_latent_attention_collectives(x, work.forward, work.backward_input);
  if (x.moe()) add_moe_collectives(x, work.forward, work.backward_input);
  add_cp_exchange(x, work.forward, false);
  add_cp_exchange(x, work.backward_input, true);
  if (training.recompute == Recompute::selective) work.recompute = selective_recompute(x, training, steps, core);
  if (training.recompute == Recompute::full) work.recompute = work.forward;
  work.parameters = layer_parameters(x);
  work.expert_parameters = layer_expert_parameters(x);
  if (x.quantized()) work.low_precision_weights = layer_linear_weights(x);
  work.activation_bytes = layer_activation_bytes(x, training);
  work.weight_grad_activation_bytes = linear_input_bytes(x);
  return work;
}

// ---- Embedding and head ----

double embedding_parameters(const Shard& x) {
  const double positions =
      x.model.learned_position_embeddings ? double(x.model.max_position_embeddings) * x.hidden : 0;
  return double(x.vocab) * x.hidden + positions;
}

UnitWork embedding_work(const Shard& x) {
  const int tables = x.model.learned_position_embeddings ? 2 : 1;
  // Reads a token (and position) row per token, writes their sum.
  const Op lookup = memory_op("embedding", x.tokens() * x.hidden, (tables + 1) * x.element_bytes);
  UnitWork work;
  work.forward.ops = {lookup};
  work.backward_weight.ops = {gradient_of(lookup, "_wgrad")};  // scatter-add into the table gradients
  // Vocab-parallel: every rank writes the whole output, zero outside its rows, then they are summed.
  add_tp_boundary(TpBoundary::leave, 1, x, Linears::megatron, work.forward, work.backward_weight);
  work.parameters = embedding_parameters(x);
  return work;
}

double head_parameters(const Shard& x) {
  return x.norm_parameters() + (x.model.tie_word_embeddings ? 0 : double(x.vocab) * x.hidden);
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
  work.parameters = head_parameters(x);
  work.weight_grad_activation_bytes = double(x.local_tokens()) * x.hidden * x.element_bytes;
  work.activation_bytes = double(x.tokens()) * x.vocab * kFp32Bytes + work.weight_grad_activation_bytes;
  return work;
}

double training_flops(const UnitWork& work) {
  return work.forward.flops() + work.backward_input.flops() + work.backward_weight.flops();
}

// The shard of a dense layer in a model mixing dense and MoE layers: an MLP
// intermediate_size wide, as in a model without experts.
Shard dense_shard(Shard rank) {
  rank.local_experts = 0;
  return rank;
}

// Block recompute: each model stage recomputes its first N layers; the
// others keep their activations, as layers without recompute.
void add_kept_layers(const Shard& rank, TrainingConfig training, Workload& workload) {
  const int64_t recomputed = training.recompute_block_layers;
  training.recompute = Recompute::none;
  workload.kept_layer = layer_work(rank, training);
  if (!workload.dense_layers.empty()) workload.kept_dense_layer = layer_work(dense_shard(rank), training);
  for (const int layers : workload.stage_layers)
    for (int i = 0; i < layers; ++i) workload.kept_layers.push_back(i >= recomputed);
}

}  // namespace

Workload build_workload(const Scenario& scenario) {
  const Shard rank = make_shard(scenario, scenario.parallel.tensor);
  const TrainingConfig& training = scenario.training;
  const ModelConfig& model = scenario.model;

  Workload workload;
  workload.layer = layer_work(rank, training);
  if (model.mixes_dense_and_moe_layers()) {
    workload.dense_layer = layer_work(dense_shard(rank), training);
    for (int64_t layer = 0; layer < model.num_layers; ++layer) workload.dense_layers.push_back(!model.is_moe_layer(layer));
  }
  workload.embedding = embedding_work(rank);
  workload.head = head_work(rank);
  workload.total_parameters = count_parameters(model).total;

  // Stages balanced (pipeline_layers auto) as if every layer were recomputed.
  workload.stage_layers = stage_layer_counts(scenario, workload);
  if (training.recompute_block_layers > 0) add_kept_layers(rank, training, workload);

  // Every TP (and CP) rank of every micro-batch of the global batch.
  const double rank_micro_batches =
      double(rank.tp * rank.cp) * double(training.global_batch_size) / double(training.micro_batch_size);
  const auto layer_works = workload.layer_works_among(0, int(model.num_layers));
  double layer_flops = 0;
  for (const auto& [work, layers] : layer_works) layer_flops += layers * training_flops(*work);
  workload.model_flops_per_step =
      rank_micro_batches * (layer_flops + training_flops(workload.embedding) + training_flops(workload.head));
  // Only the transformer layers are recomputed.
  workload.hardware_flops_per_step = workload.model_flops_per_step;
  for (const auto& [work, layers] : layer_works)
    workload.hardware_flops_per_step += rank_micro_batches * layers * work->recompute.flops();
  workload.tokens_per_step = double(training.global_batch_size) * training.seq_length;
  if (scenario.parallel.grad_reduce_in_bf16) workload.grad_bytes_per_parameter = 2;
  // Megatron's scatter/gather optimisation: each TP rank sends its 1/t slice.
  workload.stage_boundary_bytes = rank.activation_tensor_bytes() / double(rank.tp);
  workload.cp_exchange_buffer_bytes = cp_exchange_buffer_bytes(rank);
  if (model.tie_word_embeddings && scenario.parallel.pipeline > 1) {
    // The last stage holds the word embeddings the logits read, a copy of the first stage's.
    workload.tied_embedding_copy_parameters = double(rank.vocab) * rank.hidden;
    workload.head.parameters += workload.tied_embedding_copy_parameters;
  }
  return workload;
}

std::vector<std::pair<const UnitWork*, int>> Workload::layer_works_among(int first_layer, int layers) const {
  int counts[4] = {};  // layer, dense_layer, kept_layer, kept_dense_layer
  for (int index = first_layer; index < first_layer + layers; ++index) {
    const bool dense = !dense_layers.empty() && dense_layers[index];
    const bool kept = !kept_layers.empty() && kept_layers[index];
    ++counts[2 * kept + dense];
  }
  const UnitWork* works[4] = {&layer, &dense_layer, &kept_layer, &kept_dense_layer};
  std::vector<std::pair<const UnitWork*, int>> result;
  for (int i = 0; i < 4; ++i)
    if (counts[i] > 0) result.emplace_back(works[i], counts[i]);
  return result;
}

int Workload::dense_layers_among(int first_layer, int layers) const {
  if (dense_layers.empty()) return 0;
  return int(std::count(dense_layers.begin() + first_layer, dense_layers.begin() + first_layer + layers, true));
}

StageUnits stage_units(const Workload& workload, int stage) {
  const std::vector<int>& layers = workload.stage_layers;
  StageUnits units;
  units.embedding = stage == 0;
  units.first_layer = std::accumulate(layers.begin(), layers.begin() + stage, 0);
  units.layers = layers[stage];
  units.head = stage == static_cast<int>(layers.size()) - 1;
  return units;
}

Op optimizer_op(double parameters) {
  // Per parameter: fp32 master weight, m and v read and written (24), fp32
  // gradient read (4), bf16 weight written (2).
  constexpr double kBytesPerParameter = 30;
  constexpr double kFlopsPerParameter = 12;
  return {"adam", OpClass::optimizer, {std::llround(parameters)}, kFlopsPerParameter * parameters,
          kBytesPerParameter * parameters};
}

}  // namespace simtrain
