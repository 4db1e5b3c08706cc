#include "sim/model/host_launches.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/base/input_error.hpp"
#include "sim/base/text_format.hpp"
#include "sim/model/quantization.hpp"
#include "sim/scenario/flex_dispatcher.hpp"

// The code read is what NeMo 25.11 ran (the qwen3-30b-a3b-16xh100 row):
// Megatron-Bridge 97ad8cc6f pins Megatron-LM at
// 92c8482e6dcd11c3666c61bb8d1f7e8d0730ed13 (3rdparty/Megatron-LM, a dev
// commit after core_v0.15.0: "MC" below) and Transformer Engine release_v2.9
// (pyproject.toml:120; tag v2.9, 70f536662ae10a62a54f4ed1ba92e3314c5cfd69:
// "TE" below). File:line references are at those commits.

namespace simtrain {
namespace {

// ---- Host seconds per launch ----
//
// PyTorch's eager dispatch of one op from Python: about 2 µs, half of it
// Python argument parsing (N. Gimelshein, PyTorch maintainer, in
// pytorch/pytorch#41383: `x*x` without autograd "approx 2 us ... same
// operation called using c++ API would take about a microsecond").
constexpr double kPythonDispatchSeconds = 2.0e-6;
constexpr double kCppDispatchSeconds = 1.0e-6;
// Recording the autograd node: 6.8 µs with requires_grad against 5.0 µs
// without for the same op (pytorch/pytorch#41383, the measurement).
constexpr double kAutogradRecordSeconds = 6.8e-6 - 5.0e-6;
// cuLaunchKernel from the host, 0 arguments, measured on GB200 in
// meta-pytorch/tritonbench#1017 ("nop_triton_direct_culaunch 3.0µs"; the
// PR's summary quotes ~1.3 µs elsewhere). No H100 figure was found: this
// is the nearest published one; bench/launch_rate_probe.py measures it.
constexpr double kDriverLaunchSeconds = 3.0e-6;
// A Triton kernel through its Python launcher (CompiledKernel.run, 19
// arguments, cuLaunchKernel included), the same table of tritonbench#1017.
constexpr double kTritonLaunchSeconds = 5.6e-6;

}  // namespace

const HostLaunchSeconds& host_launch_seconds() {
  static const HostLaunchSeconds seconds{
      .python_forward = kPythonDispatchSeconds + kAutogradRecordSeconds + kDriverLaunchSeconds,
      .python_backward = kPythonDispatchSeconds + kDriverLaunchSeconds,
      .cpp_backward = kCppDispatchSeconds + kDriverLaunchSeconds,
      .follow_on = kDriverLaunchSeconds,
      .triton = kTritonLaunchSeconds,
      // No published measurement of cudaGraphLaunch's host time was found:
      // the nearest cited figures, a Python call and one driver launch
      // (TE's make_graphed_callables replays each graph from Python).
      .graph = kPythonDispatchSeconds + kDriverLaunchSeconds,
  };
  return seconds;
}

HostLaunchSeconds host_launch_seconds(const HostLaunchProfile& profile) {
  HostLaunchSeconds seconds = host_launch_seconds();
  const double host_speed_ratio = profile.python_no_grad.value_or(seconds.python_backward) / seconds.python_backward;
  seconds.python_forward = profile.python_forward.value_or(seconds.python_forward);
  seconds.python_backward *= host_speed_ratio;
  seconds.cpp_backward *= host_speed_ratio;
  seconds.follow_on *= host_speed_ratio;
  seconds.triton = profile.triton.value_or(seconds.triton);
  seconds.graph = profile.graph_replay.value_or(seconds.graph);
  return seconds;
}

double host_sync_seconds(const HostLaunchProfile& profile) {
  if (!profile.sync_round_trip) return 0;
  return std::max(0.0, *profile.sync_round_trip - host_launch_seconds(profile).python_backward);
}

namespace {

// What one op launches in one pass. `first` kernels are each launched by
// their own framework call (from Python in the forward; from Python or from
// the C++ autograd engine in the backward), `follow_on` more from inside
// those calls, `triton` through Triton's launcher; `outside_graph` of the
// first ones stay eager when the op's scope is captured (the dispatcher's
// copies to the host).
struct Launches {
  int first = 0;
  int follow_on = 0;
  int triton = 0;
  int syncs = 0;
  int outside_graph = 0;
  bool from_cpp = false;  // backward: launched by PyTorch's C++ autograd engine (else from Python)
  int kernels() const { return first + follow_on + triton; }
};

// An op's forward and backward: backward is what `<name>_grad` (non-GEMM)
// or each of `<name>_dgrad`, `<name>_dgrad_rhs`, `<name>_wgrad` (GEMM) launches.
struct Row {
  Launches forward, backward;
};
constexpr Launches kCpp{.first = 1, .from_cpp = true};

struct TableRow {
  const char* name;
  Row row;
};
// The ops whose counts do not depend on the scenario, by forward name.
const TableRow kFixedRows[] = {
    // TE normalization (TELayerNormColumnParallelLinear's norm, TENorm):
    // one forward kernel; backward the tuned kernel and the finalize kernel
    // reducing dgamma (TE common/normalization/rmsnorm/
    // rmsnorm_bwd_semi_cuda_kernel.cu:66, rmsnorm_bwd_kernels.cuh:205).
    {"ln1", {{1}, {1, 1}}},
    {"ln2", {{1}, {1, 1}}},
    {"q_norm", {{1}, {1, 1}}},
    {"kv_norm", {{1}, {1, 1}}},
    {"final_norm", {{1}, {1, 1}}},
    // Linears: one cuBLASLt GEMM each way (TE pytorch/cpp_extensions/gemm.py
    // general_gemm; the output layer: MC tensor_parallel/layers.py
    // LinearWithGradAccumulationAndAsyncCommunication; the router:
    // MC moe/moe_utils.py:952 RouterGatingLinearFunction, torch.mm in bf16).
    {"qkv", {{1}, {1}}},
    {"proj", {{1}, {1}}},
    {"fc1", {{1}, {1}}},
    {"fc2", {{1}, {1}}},
    {"q_down", {{1}, {1}}},
    {"q_up", {{1}, {1}}},
    {"q_proj", {{1}, {1}}},
    {"kv_down", {{1}, {1}}},
    {"kv_up", {{1}, {1}}},
    {"shared_fc1", {{1}, {1}}},
    {"shared_fc2", {{1}, {1}}},
    {"logits", {{1}, {1}}},
    {"router", {{1}, {1}}},
    // Unfused attention (MC transformer/dot_product_attention.py): baddbmm,
    // FusedScaleMaskSoftmax's one kernel each way, dropout, bmm.
    {"attn_scores", {{1}, kCpp}},
    {"softmax", {{1}, {1}}},
    {"attn_dropout", {{1}, kCpp}},
    {"attn_context", {{1}, kCpp}},
};

const Row* fixed_row(const std::string& name) {
  for (const TableRow& row : kFixedRows)
    if (name == row.name) return &row.row;
  return nullptr;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}
std::string strip(const std::string& text, const std::string& suffix) {
  return text.substr(0, text.size() - suffix.size());
}
bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

enum class Phase { forward, backward, optimizer };

// An op's name split into the forward op it belongs to and its phase.
struct OpName {
  std::string base;  // the forward op (a cast's or transpose's: its linear)
  Phase phase = Phase::forward;
  enum Kind { plain, cast, amax, transpose, weight_cast } kind = plain;
};

OpName parse_name(const std::string& name) {
  if (name == "main_grad_cast" || name == "grad_norm" || name == "adam" || name == "params_copy" || name == "zero_grad")
    return {name, Phase::optimizer};
  if (name.find("_weight_cast") != std::string::npos) return {name, Phase::optimizer, OpName::weight_cast};
  std::string rest = name;
  const bool amax = ends_with(rest, "_amax");
  if (amax) rest = strip(rest, "_amax");
  const OpName::Kind cast_kind = amax ? OpName::amax : OpName::cast;
  if (ends_with(rest, "_input_cast")) return {strip(rest, "_input_cast"), Phase::forward, cast_kind};
  if (ends_with(rest, "_grad_cast")) return {strip(rest, "_grad_cast"), Phase::backward, cast_kind};
  if (amax) throw std::invalid_argument("host_work: no cast before the amax op '" + name + "'");
  if (ends_with(rest, "_input_transpose"))
    return {strip(rest, "_input_transpose"), Phase::backward, OpName::transpose};
  for (const char* suffix : {"_dgrad_rhs", "_dgrad", "_wgrad", "_grad"})
    if (ends_with(rest, suffix)) return {strip(rest, suffix), Phase::backward};
  return {rest, Phase::forward};
}

// What the scenario and the settings decide about the launches.
struct Context {
  const Scenario& scenario;
  const HostSettings& settings;
  LinearQuantization quantization;
  int local_experts = 0;
  bool rotary = false;
  bool dropless = true;
};

// TE's quantization of one bf16 tensor into its fp8/fp4 copies (TE
// pytorch/csrc/quantizer.cpp): delayed scaling one cast-transpose kernel
// (Float8Quantizer::quantize, :276); current (tensorwise) scaling an amax
// kernel, the scale's and the cast (Float8CurrentScalingQuantizer::
// quantize_impl, :497-535); MXFP8 one kernel (MXFP8Quantizer::quantize,
// :1091); NVFP4 its amax (the workload's "_amax" op) then the row-wise cast
// and the column-wise Hadamard cast (NVFP4Quantizer::quantize_impl,
// :1438-1640).
int kernels_per_cast(const LinearQuantization& q, bool amax_op) {
  if (q.gemm_dtype == Dtype::fp4) return amax_op ? 1 : 2;
  if (q.block_elements > 0) return 1;  // mxfp8
  return q.scale_source == ScaleSource::amax_read_first ? 3 : 1;
}

Launches cast_launches(const OpName& name, const Context& x) {
  if (name.kind == OpName::transpose) return {1};  // TE's fp8 transpose of the norm's fp8 output
  const int per_tensor = kernels_per_cast(x.quantization, name.kind == OpName::amax);
  if (!starts_with(name.base, "expert_")) return {1, per_tensor - 1};
  // GroupedLinear quantizes its experts' inputs (and output gradients) with
  // one split_quantize (TE module/grouped_linear.py:127, :316-326): a fused
  // multi_cast_transpose kernel for delayed scaling, else each expert's
  // quantize in turn (TE pytorch/csrc/extensions/cast.cpp:103-150).
  // SequentialMLP: a TE Linear an expert, each its own call.
  const bool delayed_fp8 =
      x.quantization.gemm_dtype == Dtype::fp8 && x.quantization.scale_source == ScaleSource::amax_history;
  if (!x.settings.moe_grouped_gemm) return {x.local_experts, (per_tensor - 1) * x.local_experts};
  if (delayed_fp8) return {1};
  return {1, per_tensor * x.local_experts - 1};
}

// The residual's bias-dropout-add (MC fusions/fused_bias_dropout.py:11-57,
// transformer_layer.py:558, :710): jit-fused, one kernel; unfused (Megatron's
// default), the bias add, dropout (none at p = 0: ATen's dropout returns its
// input) and the residual add. Backward: the sum of the residual's two
// gradients by the autograd engine, dropout's mask multiply, the bias's
// gradient reduction.
Row bias_dropout_add_row(const Context& x) {
  if (x.settings.bias_dropout_fusion) return {{1}, kCpp};
  const int bias = x.scenario.model.linear_bias ? 1 : 0;
  const int dropout = x.scenario.model.hidden_dropout > 0 ? 1 : 0;
  return {{1 + bias + dropout}, {.first = 1 + bias + dropout, .from_cpp = true}};
}

// The MLPs' activation (MC transformer/mlp.py:147-215): jit-fused
// bias_swiglu_impl / bias_gelu_impl (fusions/fused_bias_swiglu.py,
// fused_bias_gelu.py), one kernel each way; unfused (Megatron's default), the
// bias add where there is one, then GLU's chunk (a view), SiLU and the
// product: 2 (GELU 1); backward the product's two gradients, SiLU's and the
// chunk's cat: 4 (GELU 1), the bias's reduction. TEGroupedMLP (MC
// moe/experts.py:897-953) multiplies by the router's probabilities:
// weighted_bias_swiglu_impl fused (:909; GELU has no fused form, :926), else
// the product and the cast back: 2 more forward, 3 more backward (the
// probabilities' gradient: product and reduction; the cast's).
Row activation_row(const Context& x, bool swiglu, bool weighted) {
  if (x.settings.bias_activation_fusion && swiglu) return {{1}, {1}};
  const int bias = x.scenario.model.linear_bias ? 1 : 0;
  Row row{{(swiglu ? 2 : 1) + bias}, {.first = (swiglu ? 4 : 1) + bias, .from_cpp = true}};
  if (weighted) {
    row.forward.first += 2;
    row.backward.first += 3;
  }
  return row;
}

// The routed experts' GEMMs: TE 2.9's GroupedLinear runs one cuBLAS GEMM
// per expert over its compute streams from one C++ call ("For now, we only
// have multi-stream cublas backend": TE pytorch/csrc/extensions/gemm.cpp:545;
// common/gemm/cublaslt_gemm.cu:941-964), forward, dgrad and wgrad alike.
// SequentialMLP (MC moe/experts.py) calls a TE linear per expert.
Launches expert_gemm_launches(const Context& x) {
  if (x.settings.moe_grouped_gemm) return {1, x.local_experts - 1};
  return {x.local_experts};
}

// The router after its GEMM (MC moe/router.py:482-570), softmax after the
// top-k as Qwen's moe_router_pre_softmax False.
// Top-k, fused: TE's fused_topk_with_score_function, one kernel each way
// (TE pytorch/router.py:36, :65; csrc/extensions/router.cpp:58, :85).
// Unfused (MC moe/moe_utils.py:528-627): topk, softmax in fp32 (one
// half-to-float kernel), back to bf16, the probabilities' zeros and
// out-of-place scatter (clone + scatter), the routing map's zeros, int,
// scatter (2) and bool: 11; backward the gather, the cast, softmax's
// backward, topk's zeros + scatter: 5.
// Aux loss (router.py:270-296, attach_and_log_load_balancing_loss :380-412):
// fused, fused_score_for_moe_aux_loss, routing_map.sum, fused_moe_aux_loss
// (TE router.py:147, :220), the division by the coefficient and the
// tracker's indexed add (moe_utils.py:721-749: 2): 6; backward the
// MoEAuxLossAutoScaler's ones * scale (moe_utils.py:172-210: 2), the two
// fused backwards (TE router.py:167, :239) and the sum of the logits' two
// gradients: 5. Unfused (compute_routing_scores_for_aux_loss :629-660,
// switch_load_balancing_loss_func :41-118): softmax, topk, the map (5), the
// sum, the loss's sum, mul, sum and scale (4), the division, the tracker's
// add (2): 15; backward the scaler's 2, the scale's and mul's, softmax's
// backward and the logits' sum: 6.
// Forced balancing (benchmarks): RandomSTE's clone and normal_ (:908-949).
Row router_topk_row(const Context& x) {
  const bool fused = x.settings.moe_router_fusion;
  Row row = fused ? Row{{1}, {1}} : Row{{11}, {5, 0, 0, 0, 0, true}};
  if (x.settings.moe_aux_loss) {
    row.forward.first += fused ? 6 : 15;
    row.backward.first += fused ? 5 : 6;
  }
  if (x.settings.moe_router_force_load_balancing) row.forward.first += 2;
  return row;
}

// The flex dispatcher's dispatch with DeepEP (Megatron-LM d98e8a64, "MC26"
// below: moe/token_dispatcher.py MoEFlexTokenDispatcher and _DeepepManager,
// moe/fused_a2a.py FusedDispatch; DeepEP 567632dd, the last commit with the
// API fused_a2a.py calls: deep_ep/buffer.py, csrc/deep_ep.cpp), beside the
// permutation it runs after the exchange. Forward: dispatch_preprocess,
// compiled (MC26 jit.py: jit_fuser is torch.compile), the TP-expanded
// routing map and probabilities made contiguous (one Triton kernel) and
// torch.topk (:1294-1304), with a capacity factor the dropped entries
// masked (one more); the probabilities cast to fp32 (:1313); DeepEP's
// get_dispatch_layout kernel (deep_ep.cpp:423) and notify_dispatch
// (:606), then the CPU polls the received-token counter until the GPU has
// written it (:634-650; Megatron passes no num_worst_tokens); the dispatch
// kernel itself (:691) is the EP all-to-all task, launched as a collective.
// Then _indices_to_multihot (:1337-1365; the fused form needs Megatron's
// experimental flag, not modelled): two zeros, ne, the indices' boolean
// index, arange, sum, repeat_interleave, two index_puts, the probabilities'
// boolean index, bool: 11 calls, and 5 kernels inside them (each boolean
// index's nonzero count and copy, repeat_interleave's cumsum), 3 waits
// (the two boolean indexes' nonzero, repeat_interleave's output size).
// Backward (FusedDispatch.backward, fused_a2a.py:143-165): DeepEP's combine
// with the handle, its cached_notify_combine (deep_ep.cpp:836) beside the
// combine kernel (the all-to-all task), the probabilities' gradient cast
// (2 Python calls); the autograd engine's index_put and boolean index
// gradients of the multihot probabilities (3) and the fp32 cast's (1); the
// compiled preprocess's backward, one Triton kernel.
void add_flex_dispatch(const Context& x, Row& row) {
  const bool drops = !x.dropless;
  row.forward.first += 1 + 1 + 2 + 11;  // topk, cast, layout + notify, multihot
  row.forward.follow_on += 5;
  row.forward.triton += 1 + (drops ? 1 : 0);
  row.forward.syncs += 1 + 3;
  row.backward.first += 2 + 3 + 1;
  row.backward.triton += 1;
}

bool hybridep(const Context& x) {
  return x.scenario.parallel.moe_dispatcher == MoeDispatcher::flex &&
         x.scenario.parallel.moe_flex_backend == FlexBackend::hybridep;
}

// The flex dispatcher's dispatch with HybridEP (Megatron-LM d98e8a64:
// moe/token_dispatcher.py _HybridEPManager, moe/fused_a2a.py
// HybridEPDispatch; deepseek-ai/DeepEP hybrid-ep 94a9f8f6, "HE" below:
// deep_ep/hybrid_ep_buffer.py, csrc/hybrid_ep/executor/executor.cu). Forward:
// the compiled dispatch_preprocess (the TP-expanded routing map and
// probabilities made contiguous, one Triton kernel; HybridEP takes the map,
// no topk), the probabilities cast to fp32 (_HybridEPManager.dispatch); then
// one Python call, dispatch_with_permute, whose first launch is the routing
// map's NCCL all-gather over the group (executor.cu allgather_routing_map:
// NCCL across nodes, and in a node while the custom all-gather is off, its
// default; counted as one launch, its bytes not simulated), then the
// preprocessing kernel (run_preprocess_kernel), pad_tokens_per_expert,
// across nodes the hidden states' and probabilities' copies into the RDMA
// buffer (dispatch_preprocess), the dispatch kernel (the EP all-to-all
// task) and the permute kernel: 3 follow-on launches, 5 across nodes.
// Dropless, Megatron passes no num_permuted_tokens, so HybridEP runs
// blocking: cudaStreamSynchronize for the tokens per expert in pinned memory
// (metadata_preprocess_core), 1 wait. With a capacity factor (drop-and-pad,
// as this model reads one) the permuted size is known on the host: no wait.
// The tokens come out permuted: no multihot map, no TE permutation.
// Backward (HybridEPDispatch.backward): combine_with_unpermute with the
// handle, its unpermute kernel beside the combine kernel (the task); the
// fp32 cast's gradient (1); the compiled preprocess's backward, one Triton
// kernel.
void add_hybridep_dispatch(const Context& x, Row& row) {
  const bool across = flex_group_spans_nodes(x.scenario.parallel, x.scenario.cluster.topology.gpus_per_node);
  row.forward.first += 1 + 1;  // cast, dispatch_with_permute (its all-gather)
  row.forward.follow_on += 3 + (across ? 2 : 0);
  row.forward.triton += 1;
  row.forward.syncs += x.dropless ? 1 : 0;
  row.backward.first += 1 + 1;
  row.backward.triton += 1;
}

// The dispatcher's preprocess and first permutation, where the workload
// puts moe_permute (MC moe/token_dispatcher.py:470-648).
// alltoall, dropless, over EP or TP (preprocess :512-566): routing_map.sum
// and long (2), the input splits' sum, the all-gather of the counts over
// the TP x EP group (one NCCL call), contiguous, two sums and the local
// experts' sum: 8 (without EP and TP: 2); the non-blocking copies to the
// host of tokens_per_expert, input_splits, output_splits, output_splits_tp
// (:877-896; num_global_tokens_per_local_expert too with several local
// experts and no permute fusion), and one wait for them: before the
// all-to-all (:565, :900 d2h_event.synchronize), before the first
// permutation with a capacity factor (:521). With the moe_preprocess graph
// the copies move after it (:438-444). allgather: tokens_per_expert with a
// blocking .cpu() (:295): 1 kernel, 1 wait. flex: add_flex_dispatch
// (DeepEP), or add_hybridep_dispatch alone (HybridEP permutes in its kernels).
// Permutation, fused: TE's Triton make_row_id_map (3 kernels) and
// permute_with_mask_map (TE pytorch/permutation.py:212, :248;
// triton/permutation.py:242-280, :436); backward unpermute_with_mask_map
// (permutation.py:319). Unfused (MC moe/moe_utils.py:225-309, with the
// probabilities): transpose, arange, masked_select (a Python call, then
// nonzero's count, its copy to the host and the select, and the index
// kernel: ATen native/cuda/IndexKernel.cu masked_select_out_cuda_impl ->
// index_out with a bool mask -> nonzero, which waits for the GPU), the
// probabilities' transpose and masked_select, index_select: 12 kernels, 2
// waits; backward index_select's zeros and index_add, masked_select's
// (masked_scatter: zeros, cumsum, scatter) and the transpose's: 6.
Row moe_permute_row(const Context& x) {
  Row row;
  if (hybridep(x)) {
    add_hybridep_dispatch(x, row);
    return row;
  }
  if (x.scenario.parallel.moe_dispatcher == MoeDispatcher::alltoall) {
    const bool exchanges = x.scenario.parallel.expert > 1 || x.scenario.parallel.tensor > 1;
    const int copies = 4 + (x.local_experts > 1 && !x.settings.moe_permute_fusion ? 1 : 0);
    row.forward = {.first = (exchanges ? 8 : 2) + copies, .syncs = 1, .outside_graph = copies};
  } else if (x.scenario.parallel.moe_dispatcher == MoeDispatcher::allgather) {
    row.forward = {.first = 1, .syncs = 1, .outside_graph = 1};
  }
  if (x.settings.moe_permute_fusion) {
    row.forward.triton = 4;
    row.backward.triton = 1;
  } else {
    row.forward.first += 6;
    row.forward.follow_on += 6;
    row.forward.syncs += 2;
    row.backward = {.first = 6, .from_cpp = true};
  }
  if (x.scenario.parallel.moe_dispatcher == MoeDispatcher::flex) add_flex_dispatch(x, row);
  return row;
}

// sort_chunks_by_idxs (MC moe/moe_utils.py:402-432) around the experts
// with several local experts over EP: fused, TE's make_chunk_sort_map and
// sort_chunks_by_map (Triton, triton/permutation.py:874, :978; backward one
// sort, permutation.py:703); unfused, torch.cat of the chunks (of the
// tokens, and in the dispatch also of the probabilities), their sizes
// already on the host; backward the cat of the gradients' chunks.
Row sort_chunks_row(const Context& x, bool with_probabilities) {
  if (x.settings.moe_permute_fusion) return {{.triton = 2}, {.triton = 1}};
  const int cats = with_probabilities ? 2 : 1;
  return {{cats}, {.first = cats, .from_cpp = true}};
}

// unpermute (MC moe/moe_utils.py:312-399, no probabilities in the alltoall
// dispatcher's combine): fused, TE's unpermute_with_mask_map (1 Triton
// kernel, permutation.py:365; backward permute_with_mask_map :451);
// unfused, zeros and scatter_add; backward the gather. flex: then DeepEP's
// combine (MC26 fused_a2a.py FusedCombine), its cached_notify_combine
// (deep_ep.cpp:836) beside the combine kernel (the all-to-all task);
// backward DeepEP's dispatch with the handle (cached mode: no wait), its
// cached_notify_dispatch (:591) beside the dispatch kernel. HybridEP
// unpermutes in its own combine (MC26 fused_a2a.py HybridEPCombine;
// HE hybrid_ep.cu combine_with_unpermute): the unpermute kernel beside the
// combine kernel; backward dispatch_with_permute with the handle (no
// preprocessing, no wait), across nodes the copy into the RDMA buffer, the
// permute kernel beside the dispatch kernel.
Row moe_unpermute_row(const Context& x) {
  if (hybridep(x)) {
    const bool across = flex_group_spans_nodes(x.scenario.parallel, x.scenario.cluster.topology.gpus_per_node);
    return {{1}, {.first = 1, .follow_on = across ? 1 : 0}};
  }
  Row row = x.settings.moe_permute_fusion ? Row{{.triton = 1}, {.triton = 1}} : Row{{2}, kCpp};
  if (x.scenario.parallel.moe_dispatcher == MoeDispatcher::flex) {
    row.forward.first += 1;
    row.backward.first += 1;
  }
  return row;
}

// Attention through TE's DotProductAttention (cuDNN fused attention): one
// forward kernel, and with rotary positions TE's fused RoPE on Q and K
// (MC models/common/embeddings/rope_utils.py apply_rotary_pos_emb,
// apply_rope_fusion: one kernel each). Backward: cuDNN's kernels are not
// public; FlashAttention-2's backward runs three (csrc/flash_attn/src/
// flash_bwd_launch_template.h: compute_dot_do_o, the main kernel,
// convert_dq), counted for cuDNN's too; RoPE's backward on dQ and dK.
Row attention_row(const Context& x) {
  const int rope = x.rotary ? 2 : 0;
  return {{1 + rope}, {1 + rope, 2}};
}

// The embedding (MC tensor_parallel/layers.py:272-296, VocabParallelEmbedding;
// models/common/embeddings/language_model_embedding.py:111-120): with TP,
// the out-of-range mask (3), clone and shift (2), masked fill, the lookup
// and zeroing the masked rows: 8, else the lookup; with learned positions
// their lookup and the add; then [b, s] to [s, b] (a copy). Dropout at
// p = 0 launches nothing. Backward: the copy's, and a table's gradient
// through ATen's embedding_dense_backward (native/cuda/Embedding.cu,
// EmbeddingBackwardKernel.cu), a radix sort of the indices and the segment
// kernels: 12 a table, counted from the structure of
// embedding_backward_cuda_kernel (approximate).
Row embedding_row(const Context& x) {
  const int tables = x.scenario.model.learned_position_embeddings ? 2 : 1;
  const int lookup = x.scenario.parallel.tensor > 1 ? 8 : 1;
  return {{lookup + 2 * (tables - 1) + 1}, {.first = 1 + tables, .follow_on = 11 * tables, .from_cpp = true}};
}

// The loss. Megatron's vocab-parallel cross-entropy (MC tensor_parallel/
// cross_entropy.py:23-116, the default): max, sub, the target mask (3),
// clone and shift (2), masked fill, arange and the gather (2), clone,
// masked fill, exp, sum, log and sub (2), div: 18 forward; backward
// (:85-116) arange, the mask's float and 1 - (2), index, sub and
// index_put (3), mul: 7. TE's (cross_entropy_fusion_impl te, MC
// models/common/language_module/language_module.py:141; TE
// pytorch/triton/cross_entropy.py:266-370): two zeros and the Triton
// online_softmax and cross_entropy kernels (with TP a zeros and the
// all-gather between); backward the scalar 1.0 copied to the GPU for
// torch.equal (shapes differ: no wait) and Triton's element_mul.
Row cross_entropy_row(const Context& x) {
  if (!x.settings.te_cross_entropy) return {{18}, {7}};
  return {{.first = 2 + (x.scenario.parallel.tensor > 1 ? 2 : 0), .triton = 2}, {.first = 1, .triton = 1}};
}

// One pass of the optimizer step (sim/model/optimizer_step.hpp): the
// gradient buffer's zero_() is one memset; the others run as multi-tensor
// kernels (multi_tensor_l2norm, TE FusedAdam, the copy of main to model
// params: MC optimizer/clip_grads.py, optimizer/optimizer.py), one per 320
// blocks of 65,536 elements (TE common/multi_tensor/multi_tensor_apply.cuh:19;
// pytorch/optimizers/multi_tensor_apply.py:24): a lower bound, as a launch
// also ends at 36 tensors (:18, depth 4) and the tensor count is not known
// here; the main grads' cast, a kernel a tensor, is counted so too.
Launches optimizer_launches(const Op& op) {
  if (op.name == "zero_grad") return {1};
  constexpr double kElementsPerLaunch = 320.0 * 65536.0;
  const int launches = std::max(1, int(std::ceil(double(op.shape.at(0)) / kElementsPerLaunch)));
  return {1, launches - 1};
}

// The DDP hook's accumulation of the norms' (and an MoE layer's router's)
// gradients into main_grad, one add a tensor (MC distributed/
// distributed_data_parallel.py _make_backward_post_hook).
Launches norm_bias_wgrad_launches(const Context& x) {
  const int latent_norms = x.scenario.model.has_latent_attention() ? 2 : 0;
  const int router = x.scenario.model.has_experts() ? 1 : 0;
  return {2 + latent_norms + router};
}

Row row_of(const OpName& name, const Op& op, const Context& x) {
  if (const Row* row = fixed_row(name.base)) return *row;
  if (name.base == "attn") return attention_row(x);
  if (name.base == "bias_dropout_add") return bias_dropout_add_row(x);
  if (ends_with(name.base, "swiglu") || ends_with(name.base, "gelu"))
    return activation_row(x, ends_with(name.base, "swiglu"), starts_with(name.base, "expert_"));
  if (name.base == "expert_fc1" || name.base == "expert_fc2") return {expert_gemm_launches(x), expert_gemm_launches(x)};
  if (name.base == "router_topk") return router_topk_row(x);
  if (name.base == "moe_permute") return moe_permute_row(x);
  if (name.base == "moe_sort_chunks") return sort_chunks_row(x, true);
  if (name.base == "moe_unsort_chunks") return sort_chunks_row(x, false);
  if (name.base == "moe_unpermute") return moe_unpermute_row(x);
  if (name.base == "embedding") return embedding_row(x);
  if (name.base == "cross_entropy") return cross_entropy_row(x);
  throw std::invalid_argument("host_work: no launch count for op '" + op.name + "'");
}

Launches launches_of(const Op& op, const OpName& name, const Context& x) {
  if (op.name == "norm_bias_wgrad") return norm_bias_wgrad_launches(x);
  if (op.name == "final_norm_wgrad") return {1};  // the final norm's, by the same hook
  if (name.kind == OpName::weight_cast) return {1, kernels_per_cast(x.quantization, ends_with(op.name, "_amax")) - 1};
  if (name.phase == Phase::optimizer) return optimizer_launches(op);
  if (name.kind != OpName::plain) return cast_launches(name, x);
  const Row row = row_of(name, op, x);
  return name.phase == Phase::backward ? row.backward : row.forward;
}

double eager_seconds(const Launches& launches, Phase phase, const HostLaunchSeconds& s) {
  const double each = phase != Phase::backward ? s.python_forward : launches.from_cpp ? s.cpp_backward : s.python_backward;
  return launches.first * each + launches.follow_on * s.follow_on + launches.triton * s.triton;
}

// ---- CUDA graphs ----
//
// With the transformer_engine implementation a layer's captured modules
// form one graph a pass, replayed from Python (MC transformer/
// transformer_layer.py:776-900, _get_submodules_under_cudagraphs and
// _te_cuda_graph_capture/_replay): attn captures input_layernorm, the
// self-attention and its bias-dropout-add; mlp a dense layer's pre-MLP
// norm and MLP; moe a drop-and-pad MoE layer's (MC transformer/enums.py:70-79);
// moe_router the pre-MLP norm, the router and the shared experts (when not
// overlapped); moe_preprocess also the dispatcher's preprocess and first
// permutation (MC moe/moe_layer.py:180-201, 294-306); no scope the whole
// layer; full_iteration every layer of the step in one graph (launched
// outside the works). Which modules a layer's ops belong to:
enum class Module { none, attention, mlp, moe_router, moe_preprocess, moe_rest };

bool is_attention_op(const std::string& base) {
  static const char* const names[] = {"ln1",     "qkv",   "q_down", "q_norm",      "q_up",    "q_proj",
                                      "kv_down", "kv_norm", "kv_up", "attn",       "attn_scores",
                                      "softmax", "attn_dropout", "attn_context", "proj"};
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return base == n; });
}

Module module_of(const std::string& base, bool moe_layer, bool attention_residual) {
  if (base == "bias_dropout_add") return attention_residual ? Module::attention : moe_layer ? Module::moe_rest : Module::mlp;
  if (is_attention_op(base)) return Module::attention;
  if (base == "ln2") return moe_layer ? Module::moe_router : Module::mlp;
  if (base == "fc1" || base == "fc2" || base == "swiglu" || base == "gelu") return Module::mlp;
  if (base == "router" || base == "router_topk" || starts_with(base, "shared_")) return Module::moe_router;
  if (base == "moe_permute") return Module::moe_preprocess;
  if (starts_with(base, "expert_") || starts_with(base, "moe_")) return Module::moe_rest;
  return Module::none;  // embedding, head, optimizer, the DDP hook's adds
}

bool has_scope(const HostSettings& settings, const char* scope) {
  return std::find(settings.cuda_graph_scope.begin(), settings.cuda_graph_scope.end(), scope) !=
         settings.cuda_graph_scope.end();
}

bool captured(Module module, const HostSettings& settings) {
  if (settings.cuda_graph_impl == "none" || module == Module::none) return false;
  if (settings.cuda_graph_scope.empty() || has_scope(settings, "full_iteration")) return true;
  switch (module) {
    case Module::attention: return has_scope(settings, "attn");
    case Module::mlp: return has_scope(settings, "mlp");
    case Module::moe_router: return has_scope(settings, "moe") || has_scope(settings, "moe_router");
    case Module::moe_preprocess: return has_scope(settings, "moe") || has_scope(settings, "moe_preprocess");
    case Module::moe_rest: return has_scope(settings, "moe");
    case Module::none: return false;
  }
  return false;
}

void check_graph_settings(const Context& x) {
  const HostSettings& s = x.settings;
  const std::string field = "software.cuda_graph_scope";
  const std::string& file = x.scenario.source;
  // Settings a program builds (a scenario file's are checked as they are read).
  const std::vector<std::string>& implementations = cuda_graph_implementations();
  if (std::find(implementations.begin(), implementations.end(), s.cuda_graph_impl) == implementations.end())
    throw InputError(file, "software.cuda_graph_impl",
                     "unknown implementation '" + s.cuda_graph_impl + "' (" + joined(implementations) + ")");
  const std::vector<std::string>& scopes = cuda_graph_scopes();
  for (const std::string& scope : s.cuda_graph_scope)
    if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end())
      throw InputError(file, field, "unknown scope '" + scope + "' (" + joined(scopes) + ")");
  if (s.cuda_graph_impl == "none" || !x.scenario.model.has_experts()) return;
  // DeepEP's dispatch waits for the GPU with or without a capacity factor
  // (fused_a2a.py: "not compatible with CUDA graph"); HybridEP's only
  // dropless, which the dropless checks below refuse.
  const bool graphs_dispatch = s.cuda_graph_scope.empty() || has_scope(s, "moe") ||
                               has_scope(s, "full_iteration") || has_scope(s, "moe_preprocess");
  if (x.scenario.parallel.moe_dispatcher == MoeDispatcher::flex && !hybridep(x) && graphs_dispatch)
    throw InputError(file, field,
                     "the flex dispatcher's DeepEP dispatch waits for the GPU (the received-token count), which no "
                     "graph can hold (MoE scope with flex: moe_router)");
  if (!x.dropless) return;
  // A dropless dispatcher waits for the GPU, which no graph can hold.
  const bool whole_layer = s.cuda_graph_scope.empty() || has_scope(s, "moe") || has_scope(s, "full_iteration");
  if (whole_layer)
    throw InputError(file, field,
                     "a CUDA graph over the whole MoE layer needs drop-and-pad (a capacity factor): the dropless "
                     "dispatcher waits for the GPU (MoE scopes for dropless layers: moe_router, moe_preprocess)");
  if (has_scope(s, "moe_preprocess") && !has_scope(s, "moe_router"))
    throw InputError(file, field, "moe_preprocess needs moe_router (Megatron-Core transformer/enums.py)");
  if (has_scope(s, "moe_preprocess") && !s.moe_permute_fusion)
    throw InputError(file, field,
                     "moe_preprocess needs moe_permute_fusion: the unfused permutation's masked_select waits for "
                     "the GPU inside the graph");
}

// Which residual add each bias_dropout_add is: in a forward list the norm
// before it says (ln1: the attention's), in a backward list the norm
// gradient after it.
std::vector<bool> attention_residuals(std::span<const Op> ops) {
  std::vector<bool> attention(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == "bias_dropout_add") {
      for (size_t j = i; j-- > 0;)
        if (ops[j].name == "ln1" || ops[j].name == "ln2") {
          attention[i] = ops[j].name == "ln1";
          break;
        }
    } else if (ops[i].name == "bias_dropout_add_grad") {
      for (size_t j = i + 1; j < ops.size(); ++j)
        if (ops[j].name == "ln1_grad" || ops[j].name == "ln2_grad") {
          attention[i] = ops[j].name == "ln1_grad";
          break;
        }
    }
  }
  return attention;
}

// Where a layer's part of a Work starts: its input norm in a forward, its
// MLP's residual gradient in a backward, after the DDP hook's adds that
// close a layer's weight gradients.
bool starts_layer(std::span<const Op> ops, size_t i, const std::vector<bool>& attention_residual) {
  if (ops[i].name == "ln1") return true;
  if (ops[i].name == "bias_dropout_add_grad" && !attention_residual[i]) return true;
  return i > 0 && ops[i - 1].name == "norm_bias_wgrad";
}

// Each op's layer (an index a layer part of the Work), and which of them
// are MoE layers (a model may mix dense ones in): those with a router.
struct Layers {
  std::vector<int> of_op;
  std::vector<bool> moe;
};
Layers layers_of(std::span<const Op> ops, const std::vector<bool>& attention_residual) {
  Layers layers{std::vector<int>(ops.size(), 0), {false}};
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0 && starts_layer(ops, i, attention_residual)) layers.moe.push_back(false);
    layers.of_op[i] = int(layers.moe.size()) - 1;
    if (starts_with(ops[i].name, "router")) layers.moe.back() = true;
  }
  return layers;
}

}  // namespace

HostWork host_work(std::span<const Op> ops, const Scenario& scenario, const HostSettings& settings) {
  const ModelConfig& model = scenario.model;
  const Context x{
      .scenario = scenario,
      .settings = settings,
      .quantization = linear_quantization(scenario.training),
      .local_experts = model.has_experts() ? int(model.num_experts / std::max<int64_t>(1, scenario.parallel.expert)) : 0,
      .rotary = !model.learned_position_embeddings,
      .dropless = scenario.training.capacity_factor == 0,
  };
  check_graph_settings(x);
  const bool whole_iteration = settings.cuda_graph_impl != "none" && has_scope(settings, "full_iteration");
  const std::vector<bool> attention_residual = attention_residuals(ops);
  const Layers layers = layers_of(ops, attention_residual);
  const HostLaunchSeconds seconds = host_launch_seconds(scenario.cluster.host_launch_profile);
  HostWork work;
  int graphed_layer = -1;  // the layer whose graph was launched last
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const OpName name = parse_name(op.name);
    const Launches launches = launches_of(op, name, x);
    work.kernels += launches.kernels();
    work.syncs += launches.syncs;
    const int layer = layers.of_op[i];
    const Module module = module_of(name.base, layers.moe[layer], attention_residual[i]);
    if (!captured(module, settings)) {
      work.launch_seconds += eager_seconds(launches, name.phase, seconds);
      continue;
    }
    // Captured: the graph's one launch a layer and pass (none here for
    // full_iteration's step-wide graph); what stays outside it, eager.
    work.launch_seconds += launches.outside_graph * seconds.python_forward;
    if (graphed_layer == layer || whole_iteration) continue;
    graphed_layer = layer;
    ++work.graph_launches;
    work.launch_seconds += seconds.graph;
  }
  return work;
}

HostWork host_work(std::span<const Op> ops, const Scenario& scenario) {
  return host_work(ops, scenario, scenario.software);
}

}  // namespace simtrain
