#pragma once
// What every layer kind's lowering (sim/model/layers/*_ops.hpp) builds on:
// one TP rank's share of the model for one micro-batch (`Shard`), the steps
// a layer is written in (a GEMM or a finished Op), how a step becomes the
// ops of the forward and backward passes, and the tensor-parallel
// collectives where a layer enters and leaves a column-parallel region.
// Internal to sim/model: build_workload (sim/model/workload.hpp) is what the
// rest of simtrain calls.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "sim/model/quantization.hpp"
#include "sim/model/workload.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain::layers {

inline constexpr double kMaskBytes = 1;  // dropout masks are stored as bytes
inline constexpr double kBf16Bytes = 2;
inline constexpr double kFp32Bytes = 4;
inline constexpr double kGradAccumulateBytes = 8;  // read + write of an fp32 main-grad element
// The streams Transformer Engine's multi-stream GEMMs (GroupedLinear's) run
// on: transformer_engine/common/util/multi_stream.h, num_compute_streams.
inline constexpr int64_t kTransformerEngineComputeStreams = 4;

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
  FlexBackend flex_backend = FlexBackend::deepep;  // flex: the backend that moves the rows
  int64_t ep_nodes = 1;  // flex: the nodes an EP group spans, as many members on each (expert_group_nodes)
  // Rows (token copies) each local expert of the busiest EP rank runs, as the
  // grouped GEMM's shape spreads them, and the fraction of them Megatron counts
  // (the mean's): the busiest rank bounds the layer's time, the mean its FLOPs.
  int64_t expert_rows = 0;
  double counted_expert_rows = 1;
  // The experts' GEMMs, a kernel each, that run at once (moe_grouped_gemm:
  // TE's GroupedLinear over its compute streams; else SequentialMLP's one).
  int64_t expert_gemm_streams = 1;
  // Context parallelism: each sequence split over `cp` ranks, `seq` tokens
  // each; all-to-alls over `cp_a2a` of them trade the sequence split for a
  // split of the heads, and the K/V is exchanged over the `cp_ring` others
  // (ParallelConfig::context_a2a, context_ring).
  int64_t cp = 1, cp_a2a = 1, cp_ring = 1;
  CpCommType cp_comm_type = CpCommType::p2p;
  // Sliding-window attention: the keys each query attends to at most (0: all before it).
  int64_t window = 0;

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

// The shard of one of `tp` TP ranks; InputError where tp does not divide the heads or the MLP.
Shard make_shard(const Scenario& scenario, int64_t tp);

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
  // 0: the batch is one batched kernel; else a kernel per product, that many at once (a rank's experts).
  int64_t kernel_streams = 0;
};

// Anything else: attention kernels and memory-bound ops, built as finished Ops.
using Step = std::variant<MatMul, Op>;
const std::string& step_name(const Step& step);

// A layer's linear (Transformer Engine's: quantized operands in fp8 and fp4
// training) over `rows` tokens; `input_from_norm`: it reads the norm before
// it, which under delayed scaling writes its output quantized already.
MatMul layer_linear(const Shard& x, const std::string& name, int64_t rows, int64_t n, int64_t k, bool input_from_norm);

// A norm before a layer's linear (the residual's SP-local rows): reads its
// input, writes its output as the linear reads it.
Op linear_input_norm(const Shard& x, const std::string& name);

// Memory-bound ops carry no FLOPs: their time is HBM traffic, and Megatron's
// FLOP counts (hence MFU and the step totals) cover only GEMMs and attention.
Op memory_op(const std::string& name, int64_t elements, double bytes_per_element);

// Backward of a non-GEMM op: about twice its forward FLOPs and traffic
// (fused attention's with the recomputed scores beyond Megatron's count).
Op gradient_of(const Op& forward, const std::string& suffix);

// The step's forward ops (a quantized linear's input cast, then its GEMM) appended to `forward`.
void add_forward(const Step& step, const Shard& x, Pass& forward);
// Forward in order; backward in reverse, split into input and weight gradients.
void add_passes(const std::vector<Step>& steps, const Shard& x, UnitWork& work);

// Megatron's conjugate TP operators: entering a column-parallel region is an
// identity (SP: allgather) forward and an allreduce (SP: reducescatter)
// backward; leaving a row-parallel region is the reverse (op_builder.cpp
// says which run beside which GEMM).
enum class TpBoundary { enter, leave };

// Whose linears a boundary's collectives serve: the layers' are Transformer
// Engine's (quantized operands in fp8 and fp4 training, userbuffers under tp_comm_overlap);
// the vocabulary-parallel embedding and output layer are Megatron's own (bf16, NCCL).
enum class Linears { transformer_engine, megatron };

// `count` boundaries of a tensor `width` wide per token; `linear_input`
// false for one no linear reads (gathered in bf16, not again for a weight gradient).
void add_tp_boundary_of_width(TpBoundary boundary, int count, int64_t width, const Shard& x, Linears linears,
                              Pass& forward, Pass& backward, bool linear_input = true);
// ... of the hidden size.
void add_tp_boundary(TpBoundary boundary, int count, const Shard& x, Linears linears, Pass& forward, Pass& backward);

}  // namespace simtrain::layers
