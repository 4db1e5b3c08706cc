#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/model/host_launches.hpp"
#include "sim/model/optimizer_step.hpp"
#include "sim/model/quantization.hpp"
#include "sim/model/workload.hpp"

// Counts as read in Megatron-LM 92c8482e ("MC", what NeMo 25.11 pins) and
// Transformer Engine v2.9 ("TE"); the file:line of each is beside its row
// in sim/model/host_launches.cpp.

namespace simtrain {
namespace {

// Without dropout, as NeMo's Qwen3 provider (Megatron-Bridge 97ad8cc6f qwen_provider.py:377-378).
// The shipped Qwen3 scenario under Megatron-Core's default software settings.
Scenario qwen3() {
  Scenario scenario = load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/qwen3-30b-a3b-16xh100.json");
  scenario.model.hidden_dropout = scenario.model.attention_dropout = 0;
  scenario.software = {};
  return scenario;
}

// NeMo 25.11's Qwen3-30B-A3B recipe on H100 in fp8, as the shipped scenario's
// software section writes it.
HostSettings nemo_qwen3_moe_host_settings() {
  return load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/qwen3-30b-a3b-16xh100.json").software;
}
Scenario llama8b() { return load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/nemo-llama3-8b-8xh100.json"); }

Scenario bf16(Scenario scenario) {
  scenario.training.dtype = Dtype::bf16;
  return scenario;
}

std::vector<Op> ops_named(const std::vector<std::string>& names) {
  std::vector<Op> ops;
  for (const std::string& name : names) ops.push_back({name, OpClass::memory_bound, {1024}});
  return ops;
}

int kernels(const std::vector<std::string>& names, const Scenario& scenario, const HostSettings& settings = {}) {
  return host_work(ops_named(names), scenario, settings).kernels;
}

std::string graph_error(const Scenario& scenario, const HostSettings& settings) {
  try {
    host_work(build_workload(scenario).layer.forward.ops, scenario, settings);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(HostLaunches, LaunchSecondsAreTheCitedFiguresSummed) {
  const HostLaunchSeconds& s = host_launch_seconds();
  // pytorch/pytorch#41383: 2 µs dispatch (1 µs from C++), 6.8 - 5.0 µs autograd;
  // tritonbench#1017: 3.0 µs cuLaunchKernel, 5.6 µs Triton's launcher.
  EXPECT_DOUBLE_EQ(s.python_forward, 2.0e-6 + 1.8e-6 + 3.0e-6);
  EXPECT_DOUBLE_EQ(s.python_backward, 2.0e-6 + 3.0e-6);
  EXPECT_DOUBLE_EQ(s.cpp_backward, 1.0e-6 + 3.0e-6);
  EXPECT_DOUBLE_EQ(s.follow_on, 3.0e-6);
  EXPECT_DOUBLE_EQ(s.triton, 5.6e-6);
  EXPECT_DOUBLE_EQ(s.graph, 2.0e-6 + 3.0e-6);
}

TEST(HostLaunches, DenseOpsAsTransformerEngineRunsThem) {
  const Scenario llama = bf16(llama8b());
  EXPECT_EQ(kernels({"ln1"}, llama), 1);        // TE rmsnorm forward
  EXPECT_EQ(kernels({"ln1_grad"}, llama), 2);   // tuned kernel + dgamma finalize (rmsnorm_bwd_semi_cuda_kernel.cu:66)
  EXPECT_EQ(kernels({"qkv", "qkv_dgrad", "qkv_wgrad"}, llama), 3);  // one cuBLASLt GEMM each
  EXPECT_EQ(kernels({"attn"}, llama), 3);       // fused attention + RoPE on Q and K
  EXPECT_EQ(kernels({"attn_grad"}, llama), 5);  // FlashAttention-2's three backward kernels + RoPE's two
  EXPECT_EQ(kernels({"cross_entropy"}, llama), 18);      // MC tensor_parallel/cross_entropy.py:23-116
  EXPECT_EQ(kernels({"cross_entropy_grad"}, llama), 7);
  HostSettings te_loss;
  te_loss.te_cross_entropy = true;  // two zeros, two Triton kernels (TE triton/cross_entropy.py:266-340)
  EXPECT_EQ(kernels({"cross_entropy"}, llama, te_loss), 4);
  EXPECT_EQ(kernels({"cross_entropy_grad"}, llama, te_loss), 2);
  // SwiGLU: chunk, SiLU, product unfused (Megatron's default); one kernel jit-fused.
  EXPECT_EQ(kernels({"swiglu"}, llama), 2);
  EXPECT_EQ(kernels({"swiglu_grad"}, llama), 4);
  HostSettings fused;
  fused.bias_activation_fusion = true;
  EXPECT_EQ(kernels({"swiglu", "swiglu_grad"}, llama, fused), 2);
  EXPECT_EQ(kernels({"expert_swiglu"}, llama), 2 + 2);  // TEGroupedMLP: times the probabilities, cast back
  EXPECT_EQ(kernels({"bias_dropout_add"}, llama), 1);   // no bias, dropout 0: the residual add alone
  // Embedding at TP 1: the lookup and the [b, s] -> [s, b] copy; its table
  // gradient 12 kernels (approximate) and the copy's backward.
  EXPECT_EQ(kernels({"embedding"}, llama), 2);
  EXPECT_EQ(kernels({"embedding_wgrad"}, llama), 13);
  // Learned positions: no RoPE kernels; a second table to look up, add and reduce.
  Scenario gpt = llama;
  gpt.model.learned_position_embeddings = true;
  EXPECT_EQ(kernels({"attn", "attn_grad"}, gpt), 1 + 3);
  EXPECT_EQ(kernels({"embedding"}, gpt), 4);
  gpt.model.linear_bias = true;
  gpt.model.hidden_dropout = 0.1;  // bias add, dropout, residual add
  EXPECT_EQ(kernels({"bias_dropout_add"}, gpt), 3);
  gpt.parallel.tensor = 2;  // VocabParallelEmbedding's masking (layers.py:272-296)
  EXPECT_EQ(kernels({"embedding"}, gpt), 8 + 2 + 1);
}

TEST(HostLaunches, CastsFollowTheRecipe) {
  Scenario fp8 = qwen3();  // 128 experts over EP 8: 16 local experts
  fp8.training.fp8_recipe = Fp8Recipe::delayed;
  EXPECT_EQ(kernels({"qkv_input_cast"}, fp8), 1);          // cast-transpose (quantizer.cpp:276)
  EXPECT_EQ(kernels({"expert_fc1_input_cast"}, fp8), 1);   // one multi_cast_transpose (cast.cpp:103-150)
  fp8.training.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_EQ(kernels({"qkv_input_cast"}, fp8), 3);          // amax, scale, cast (quantizer.cpp:497-535)
  EXPECT_EQ(kernels({"expert_fc1_grad_cast"}, fp8), 3 * 16);  // each expert's in turn
  fp8.training.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_EQ(kernels({"qkv_input_cast"}, fp8), 1);
  EXPECT_EQ(kernels({"expert_fc2_input_cast"}, fp8), 16);
  HostSettings sequential;
  sequential.moe_grouped_gemm = false;
  fp8.training.fp8_recipe = Fp8Recipe::delayed;  // a TE Linear an expert: no fused multi-tensor cast
  EXPECT_EQ(kernels({"expert_fc1_input_cast"}, fp8, sequential), 16);
  Scenario fp4 = qwen3();
  fp4.training.dtype = Dtype::fp4;  // NVFP4: amax, then row-wise and column-wise (Hadamard) casts
  EXPECT_EQ(kernels({"qkv_input_cast_amax", "qkv_input_cast"}, fp4), 1 + 2);
}

TEST(HostLaunches, ExpertGemmsAreOneCublasGemmAnExpert) {
  const Scenario scenario = qwen3();
  // TE 2.9 GroupedLinear: multi-stream cuBLAS, one GEMM an expert (gemm.cpp:545).
  EXPECT_EQ(kernels({"expert_fc1"}, scenario), 16);
  EXPECT_EQ(kernels({"expert_fc1_dgrad", "expert_fc1_wgrad"}, scenario), 2 * 16);
  // ... launched from one call: the first from Python, 15 from inside it.
  const HostLaunchSeconds& s = host_launch_seconds();
  EXPECT_DOUBLE_EQ(host_work(ops_named({"expert_fc1"}), scenario).launch_seconds, s.python_forward + 15 * s.follow_on);
  HostSettings sequential;
  sequential.moe_grouped_gemm = false;  // SequentialMLP: a TE linear call an expert
  EXPECT_DOUBLE_EQ(host_work(ops_named({"expert_fc1"}), scenario, sequential).launch_seconds, 16 * s.python_forward);
}

TEST(HostLaunches, RouterWithAndWithoutFusion) {
  const Scenario scenario = qwen3();
  HostSettings plain;
  plain.moe_aux_loss = false;
  EXPECT_EQ(kernels({"router_topk"}, scenario, plain), 11);      // moe_utils.py:528-627
  EXPECT_EQ(kernels({"router_topk_grad"}, scenario, plain), 5);
  EXPECT_EQ(kernels({"router_topk"}, scenario), 11 + 15);        // + the unfused aux loss
  HostSettings fused;
  fused.moe_router_fusion = true;
  EXPECT_EQ(kernels({"router_topk"}, scenario, fused), 1 + 6);   // TE router.py:36 + the fused aux loss's
  EXPECT_EQ(kernels({"router_topk_grad"}, scenario, fused), 1 + 5);
  fused.moe_router_force_load_balancing = true;                  // RandomSTE: clone, normal_
  EXPECT_EQ(kernels({"router_topk"}, scenario, fused), 1 + 6 + 2);
}

TEST(HostLaunches, AlltoallDispatcherWaitsOnceForTheTokenCounts) {
  const Scenario scenario = qwen3();
  HostSettings fused;
  fused.moe_permute_fusion = true;
  // Preprocess 8 kernels (the counts' all-gather among them), 4 copies to the
  // host, one wait before the all-to-all (token_dispatcher.py:565, :900);
  // TE's Triton row-id map (3) and permute.
  const HostWork permute = host_work(ops_named({"moe_permute"}), scenario, fused);
  EXPECT_EQ(permute.kernels, 8 + 4 + 4);
  EXPECT_EQ(permute.syncs, 1);
  // Unfused: a fifth copy (the per-local-expert counts), 12 permutation
  // kernels and masked_select's two nonzero waits.
  const HostWork unfused = host_work(ops_named({"moe_permute"}), scenario);
  EXPECT_EQ(unfused.kernels, 8 + 5 + 12);
  EXPECT_EQ(unfused.syncs, 1 + 2);
  // The backward does not wait: the splits are on the host already.
  EXPECT_EQ(host_work(ops_named({"moe_permute_grad", "moe_sort_chunks_grad", "moe_unpermute_grad"}), scenario).syncs,
            0);
  Scenario allgather = scenario;
  allgather.parallel.moe_dispatcher = MoeDispatcher::allgather;  // tokens_per_expert .cpu() (:295)
  EXPECT_EQ(host_work(ops_named({"moe_permute"}), allgather, fused).syncs, 1);
}

// The flex dispatcher with DeepEP (Megatron-LM d98e8a64 moe/token_dispatcher.py,
// moe/fused_a2a.py; DeepEP 567632dd csrc/deep_ep.cpp): the compiled
// preprocess (1 Triton) and topk, the probabilities' fp32 cast, DeepEP's
// layout and notify kernels, then the CPU polls the received-token count
// (1 wait); the multihot map's 11 calls and 5 kernels inside them (3
// waits); the permutation. The dispatch and combine kernels themselves are
// the EP all-to-all tasks.
TEST(HostLaunches, FlexDispatcherWaitsForDeepEpsReceivedTokenCount) {
  Scenario flex = qwen3();
  flex.parallel.moe_dispatcher = MoeDispatcher::flex;
  HostSettings fused;
  fused.moe_permute_fusion = true;
  const HostWork permute = host_work(ops_named({"moe_permute"}), flex, fused);
  EXPECT_EQ(permute.kernels, 1 + 1 + 1 + 2 + 11 + 5 + 4);
  EXPECT_EQ(permute.syncs, 1 + 3);
  const HostWork unfused = host_work(ops_named({"moe_permute"}), flex);
  EXPECT_EQ(unfused.kernels, 1 + 1 + 1 + 2 + 11 + 5 + 12);
  EXPECT_EQ(unfused.syncs, 1 + 3 + 2);
  // Backward: TE's unpermute, DeepEP's cached_notify_combine and the
  // probabilities' gradient cast, the multihot's 3 and the cast's gradient,
  // the compiled preprocess's backward; no wait (the handle holds the layout).
  const HostWork permute_grad = host_work(ops_named({"moe_permute_grad"}), flex, fused);
  EXPECT_EQ(permute_grad.kernels, 1 + 2 + 3 + 1 + 1);
  EXPECT_EQ(permute_grad.syncs, 0);
  // The combine's cached_notify_combine after TE's unpermute; backward
  // DeepEP's cached dispatch, its cached_notify_dispatch.
  EXPECT_EQ(kernels({"moe_unpermute"}, flex, fused), 1 + 1);
  EXPECT_EQ(kernels({"moe_unpermute_grad"}, flex, fused), 1 + 1);
  flex.training.capacity_factor = 1;  // the compiled preprocess masks the dropped entries
  EXPECT_EQ(kernels({"moe_permute"}, flex, fused), permute.kernels + 1);
}

// DeepEP's dispatch waits on the CPU whether tokens are dropped or not: no
// graph holds it.
TEST(HostLaunches, FlexDispatcherKeepsItsDispatchOutOfGraphs) {
  Scenario flex = qwen3();
  flex.parallel.moe_dispatcher = MoeDispatcher::flex;
  flex.training.capacity_factor = 1;
  HostSettings settings = nemo_qwen3_moe_host_settings();
  settings.cuda_graph_impl = "transformer_engine";
  settings.cuda_graph_scope = {"attn", "moe_router", "moe_preprocess"};
  const std::string refused = "software.cuda_graph_scope: the flex dispatcher's DeepEP dispatch waits for the GPU (the "
                              "received-token count), which no graph can hold (MoE scope with flex: moe_router)";
  EXPECT_NE(graph_error(flex, settings).find(refused), std::string::npos) << graph_error(flex, settings);
  settings.cuda_graph_scope = {"moe"};
  EXPECT_NE(graph_error(flex, settings).find(refused), std::string::npos);
  settings.cuda_graph_scope = {"attn", "moe_router"};
  EXPECT_EQ(graph_error(flex, settings), "no error");
}

// The flex dispatcher with HybridEP (Megatron-LM d98e8a64 moe/token_dispatcher.py
// _HybridEPManager, moe/fused_a2a.py HybridEPDispatch/HybridEPCombine;
// deepseek-ai/DeepEP hybrid-ep 94a9f8f6 deep_ep/hybrid_ep_buffer.py,
// csrc/hybrid_ep/executor/executor.cu). Forward dispatch: the compiled
// preprocess (1 Triton), the probabilities' fp32 cast, dispatch_with_permute
// launching the routing map's NCCL all-gather, the preprocessing kernel,
// pad_tokens_per_expert and the permute kernel; dropless, the
// cudaStreamSynchronize for the tokens per expert (1 wait). No multihot map,
// no TE permutation. EP 8 on one node: no copies into the RDMA buffer.
TEST(HostLaunches, HybridEpDispatchPermutesInsideAndWaitsOnlyDropless) {
  Scenario hybrid = qwen3();
  hybrid.parallel.moe_dispatcher = MoeDispatcher::flex;
  hybrid.parallel.moe_flex_backend = FlexBackend::hybridep;
  HostSettings fused;
  fused.moe_permute_fusion = true;  // TE's permutation is not HybridEP's: the same counts unfused
  for (const HostSettings& settings : {fused, HostSettings{}}) {
    const HostWork permute = host_work(ops_named({"moe_permute"}), hybrid, settings);
    EXPECT_EQ(permute.kernels, 1 + 1 + 1 + 3);
    EXPECT_EQ(permute.syncs, 1);
    // Backward: combine_with_unpermute's unpermute kernel, the cast's
    // gradient, the compiled preprocess's backward; no wait.
    const HostWork permute_grad = host_work(ops_named({"moe_permute_grad"}), hybrid, settings);
    EXPECT_EQ(permute_grad.kernels, 1 + 1 + 1);
    EXPECT_EQ(permute_grad.syncs, 0);
    // The combine's unpermute kernel; backward the cached dispatch's permute kernel.
    EXPECT_EQ(kernels({"moe_unpermute"}, hybrid, settings), 1);
    EXPECT_EQ(kernels({"moe_unpermute_grad"}, hybrid, settings), 1);
  }
  // With a capacity factor the permuted size is known on the host
  // (num_permuted_tokens): non-blocking, no wait.
  Scenario capped = hybrid;
  capped.training.capacity_factor = 1;
  EXPECT_EQ(host_work(ops_named({"moe_permute"}), capped, fused).syncs, 0);
  // EP 16 over two nodes: the hidden states and probabilities copied into
  // the RDMA buffer forward, the gradient backward.
  Scenario across = hybrid;
  across.parallel.expert = 16;
  EXPECT_EQ(kernels({"moe_permute"}, across, fused), 1 + 1 + 1 + 3 + 2);
  EXPECT_EQ(kernels({"moe_unpermute_grad"}, across, fused), 1 + 1);
}

// HybridEP's dispatch waits only dropless: with a capacity factor the
// moe_preprocess and moe scopes are not refused for it, as DeepEP's are.
TEST(HostLaunches, HybridEpDispatchFitsGraphsWithACapacityFactor) {
  Scenario hybrid = qwen3();
  hybrid.parallel.moe_dispatcher = MoeDispatcher::flex;
  hybrid.parallel.moe_flex_backend = FlexBackend::hybridep;
  hybrid.training.capacity_factor = 1;
  HostSettings settings = nemo_qwen3_moe_host_settings();
  settings.cuda_graph_impl = "transformer_engine";
  settings.cuda_graph_scope = {"attn", "moe_router", "moe_preprocess"};
  EXPECT_EQ(graph_error(hybrid, settings), "no error");
  settings.cuda_graph_scope = {"moe"};
  EXPECT_EQ(graph_error(hybrid, settings), "no error");
  hybrid.training.capacity_factor = 0;  // dropless: the dropless dispatcher's refusal
  EXPECT_NE(graph_error(hybrid, settings).find("a CUDA graph over the whole MoE layer needs drop-and-pad"),
            std::string::npos);
}

TEST(HostLaunches, MoeLayerAsNemoRanIt) {
  const Scenario scenario = qwen3();
  const Workload workload = build_workload(scenario);
  const HostWork forward = host_work(workload.layer.forward.ops, scenario, nemo_qwen3_moe_host_settings());
  // ln1 1, qkv cast 3, qkv 1, attn + RoPE 3, proj cast 3, proj 1, residual 1,
  // ln2 1, router 1, top-k 1 + aux loss 6 + RandomSTE 2, dispatcher 12 + 4
  // Triton, sort 2, expert fc1 casts 48 and GEMMs 16, swiglu 1, fc2 casts 48
  // and GEMMs 16, unsort 2, unpermute 1, residual 1.
  EXPECT_EQ(forward.kernels, 1 + 3 + 1 + 3 + 3 + 1 + 1 + 1 + 1 + 9 + 16 + 2 + 48 + 16 + 1 + 48 + 16 + 2 + 1 + 1);
  EXPECT_EQ(forward.syncs, 1);
  EXPECT_EQ(forward.graph_launches, 0);
  EXPECT_EQ(host_work(workload.layer.backward_input.ops, scenario, nemo_qwen3_moe_host_settings()).syncs, 0);
  // Megatron's defaults (no fusions): the permutation's masked_selects wait too.
  EXPECT_EQ(host_work(workload.layer.forward.ops, scenario).syncs, 3);
}

TEST(HostLaunches, DenseLayerUnderCudaGraphs) {
  const Scenario scenario = bf16(llama8b());
  const std::vector<Op>& forward = build_workload(scenario).layer.forward.ops;
  const HostWork eager = host_work(forward, scenario);
  EXPECT_EQ(eager.graph_launches, 0);
  HostSettings whole;
  whole.cuda_graph_impl = "transformer_engine";  // no scope: the whole layer, one graph
  const HostWork graphed = host_work(forward, scenario, whole);
  EXPECT_EQ(graphed.kernels, eager.kernels);  // the same kernels run
  EXPECT_EQ(graphed.graph_launches, 1);
  EXPECT_DOUBLE_EQ(graphed.launch_seconds, host_launch_seconds().graph);
  HostSettings attn_mlp = whole;  // attn and mlp: still one graph for the layer
  attn_mlp.cuda_graph_scope = {"attn", "mlp"};
  EXPECT_DOUBLE_EQ(host_work(forward, scenario, attn_mlp).launch_seconds, host_launch_seconds().graph);
  // attn only: the MLP's ops (ln2, fc1, swiglu, fc2, residual) launch eagerly.
  HostSettings attn = whole;
  attn.cuda_graph_scope = {"attn"};
  const double mlp_eager =
      host_work(ops_named({"ln2", "fc1", "swiglu", "fc2"}), scenario).launch_seconds + host_launch_seconds().python_forward;
  EXPECT_DOUBLE_EQ(host_work(forward, scenario, attn).launch_seconds, host_launch_seconds().graph + mlp_eager);
  // Two layers in one Work: a graph each.
  std::vector<Op> two_layers = forward;
  two_layers.insert(two_layers.end(), forward.begin(), forward.end());
  EXPECT_EQ(host_work(two_layers, scenario, whole).graph_launches, 2);
}

TEST(HostLaunches, MoeLayerUnderRouterAndPreprocessGraphs) {
  const Scenario scenario = qwen3();
  const Workload workload = build_workload(scenario);
  HostSettings settings = nemo_qwen3_moe_host_settings();
  const HostWork eager = host_work(workload.layer.forward.ops, scenario, settings);
  settings.cuda_graph_impl = "transformer_engine";
  settings.cuda_graph_scope = {"attn", "moe_router", "moe_preprocess"};  // the GB200/GB300 presets'
  const HostWork graphed = host_work(workload.layer.forward.ops, scenario, settings);
  EXPECT_EQ(graphed.graph_launches, 1);  // attention through the first permutation: one graph
  EXPECT_EQ(graphed.kernels, eager.kernels);
  EXPECT_EQ(graphed.syncs, 1);  // the wait moves after the graph (token_dispatcher.py:438-444)
  // What stays eager: the 4 copies to the host, then the experts and the combine.
  const HostLaunchSeconds& s = host_launch_seconds();
  const double rest = host_work(ops_named({"moe_sort_chunks", "expert_fc1_input_cast", "expert_fc1", "expert_swiglu",
                                           "expert_fc2_input_cast", "expert_fc2", "moe_unsort_chunks",
                                           "moe_unpermute"}),
                                scenario, nemo_qwen3_moe_host_settings())
                          .launch_seconds;
  EXPECT_DOUBLE_EQ(graphed.launch_seconds, s.graph + 4 * s.python_forward + rest + s.python_forward);
  const HostWork backward = host_work(workload.layer.backward_input.ops, scenario, settings);
  EXPECT_EQ(backward.graph_launches, 1);
}

TEST(HostLaunches, DenseLayersOfAnMoeModelUseTheMlpScope) {
  // DeepSeek-V3's first three layers are dense: attn and mlp capture one whole.
  const Scenario scenario = load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/deepseek-v3-2048xh800.json");
  const Workload workload = build_workload(scenario);
  HostSettings settings;
  settings.cuda_graph_impl = "transformer_engine";
  settings.cuda_graph_scope = {"attn", "mlp"};
  const HostWork dense = host_work(workload.dense_layer.forward.ops, scenario, settings);
  EXPECT_EQ(dense.graph_launches, 1);
  EXPECT_DOUBLE_EQ(dense.launch_seconds, host_launch_seconds().graph);
  // Its MoE layers: attention captured, the MoE MLP eager.
  const HostWork moe = host_work(workload.layer.forward.ops, scenario, settings);
  EXPECT_EQ(moe.graph_launches, 1);
  EXPECT_GT(moe.launch_seconds, host_launch_seconds().graph);
}

TEST(HostLaunches, GraphScopesThatCannotCaptureTheLayerAreRefused) {
  const Scenario scenario = qwen3();  // dropless
  HostSettings whole;
  whole.cuda_graph_impl = "transformer_engine";
  EXPECT_NE(graph_error(scenario, whole).find("needs drop-and-pad"), std::string::npos) << graph_error(scenario, whole);
  HostSettings moe = whole;
  moe.cuda_graph_scope = {"moe"};
  EXPECT_EQ(graph_error(scenario, moe).rfind(scenario.source + ": software.cuda_graph_scope: a CUDA graph over the whole "
                                            "MoE layer needs drop-and-pad",
                                            0),
            0u)
      << graph_error(scenario, moe);
  HostSettings unknown = whole;
  unknown.cuda_graph_scope = {"experts"};
  EXPECT_NE(graph_error(scenario, unknown).find("unknown scope 'experts'"), std::string::npos);
  HostSettings unfused = whole;
  unfused.cuda_graph_scope = {"moe_router", "moe_preprocess"};
  EXPECT_NE(graph_error(scenario, unfused).find("needs moe_permute_fusion"), std::string::npos);
  Scenario dropping = scenario;
  dropping.training.capacity_factor = 1.0;  // drop-and-pad: the whole layer, no wait
  const HostWork captured = host_work(build_workload(dropping).layer.forward.ops, dropping, moe);
  EXPECT_EQ(captured.graph_launches, 1);
}

TEST(HostLaunches, OptimizerStepIsThreeMultiTensorPassesAndAMemset) {
  const Scenario scenario = llama8b();
  // 320 blocks of 65,536 elements a launch (multi_tensor_apply.cuh:19, multi_tensor_apply.py:24).
  const double per_launch = 320.0 * 65536;
  auto kernels = [&](double parameters) {
    return host_work(optimizer_step_ops({.updated_parameters = parameters, .gradient_parameters = 2 * parameters}),
                     scenario)
        .kernels;
  };
  EXPECT_EQ(kernels(per_launch), 3 + 1);
  EXPECT_EQ(kernels(3 * per_launch + 1), 3 * 4 + 1);
}

// Every op of every shipped scenario has a count: a new op in the workload
// fails here until the table knows it.
TEST(HostLaunches, EveryShippedScenarioOpIsCounted) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const Scenario scenario = load_scenario(entry.path().string());
    const Workload workload = build_workload(scenario);
    for (const UnitWork* unit : {&workload.layer, &workload.dense_layer, &workload.kept_layer,
                                 &workload.kept_dense_layer, &workload.embedding, &workload.head})
      for (const Pass* pass : {&unit->forward, &unit->backward_input, &unit->backward_weight, &unit->recompute})
        EXPECT_NO_THROW(host_work(pass->ops, scenario));
    std::vector<Op> optimizer = optimizer_step_ops({.updated_parameters = 1e9, .gradient_parameters = 1e9,
                                                    .grad_bytes_per_parameter = 2});
    for (const Op& cast : weight_cast_ops(linear_quantization(scenario.training), 1e9)) optimizer.push_back(cast);
    EXPECT_NO_THROW(host_work(optimizer, scenario));
  }
}

TEST(HostLaunches, UnknownOpNamesAreAnError) {
  EXPECT_THROW(host_work(ops_named({"mystery"}), llama8b()), std::invalid_argument);
}

}  // namespace
}  // namespace simtrain
