#pragma once
// A scenario: the model, how it is trained, how it is parallelised, and on
// which cluster. Field names follow Megatron-LM (parallelism, batch) and
// Hugging Face config.json (model), so users can paste what they already have.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/communication_backend.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/heterogeneity.hpp"
#include "sim/scenario/host_launch_profile.hpp"
#include "sim/scenario/host_settings.hpp"
#include "sim/scenario/model_config.hpp"
#include "sim/scenario/run_config.hpp"
#include "sim/scenario/topology.hpp"

namespace simtrain {

// fp8 and fp4 training run only the layers' linear GEMMs in that format
// (Transformer Engine's recipes, sim/model/quantization.hpp); fp4 is NVFP4
// (Megatron's --fp4-format e2m1 --fp4-recipe nvfp4).
enum class Dtype { bf16, fp16, fp8, fp4 };
enum class Recompute { none, selective, full };
// Transformer Engine's fp8 scaling (Megatron's --fp8-recipe): delayed takes each
// tensor's scale from the amax history, tensorwise ("current scaling") from
// the tensor itself, a reduction pass over it before every cast; mxfp8
// (Blackwell) one power-of-two scale per 32 consecutive elements, found by
// the cast itself.
enum class Fp8Recipe { delayed, tensorwise, mxfp8 };
// dualpipe and dualpipe_v: DeepSeek-V3's bidirectional schedule and its
// V-shaped variant (sim/program/pipeline_schedule.hpp, docs/schedules.md).
enum class ScheduleKind { gpipe, one_f_one_b, interleaved_1f1b, zb_h1, dualpipe, dualpipe_v };
// Whether the schedule runs weight gradients (W) apart from input gradients (B).
bool splits_backward(ScheduleKind schedule);
// How data-parallel ranks synchronise gradients: auto lets the executor pick
// ring or tree per all-reduce (as NCCL's tuner does).
enum class DpSync { auto_, ring, tree, hierarchical, parameter_server };
// How a pipeline transfer's SEND and RECV meet. paired (Megatron-LM's
// blocking p2p calls): the transfer starts once the sender has posted its
// SEND and the receiver its RECV, each on its compute stream; the transfers
// Megatron issues in one batch_isend_irecv complete together and block the
// compute stream until then. eager: the SEND goes out as soon as it is
// issued, into a pre-posted receive that blocks nothing.
enum class P2pCommunication { paired, eager };
// How an MoE layer moves tokens to the ranks of their experts
// (Megatron-Core's --moe-token-dispatcher-type): all-to-all sends each
// token to the ranks it is routed to; allgather gathers every rank's tokens
// on every rank of the expert-parallel group and reduce-scatters the outputs;
// flex (DeepEP's normal kernels) sends each token once to each rank that
// holds any of its experts (docs/moe-and-context-parallelism.md).
enum class MoeDispatcher { alltoall, allgather, flex };
// The flex dispatcher's backend (Megatron-Core's --moe-flex-dispatcher-backend):
// DeepEP's normal kernels, or HybridEP (DeepEP's hybrid-ep branch), which
// moves the same rows, permutes them inside its own kernels and, with a
// capacity factor, needs no wait for the GPU.
enum class FlexBackend { deepep, hybridep };
// How context-parallel ranks exchange keys and values for attention
// (Megatron-Core's --cp-comm-type, Transformer Engine's implementations):
// p2p passes each rank's K/V chunk around the CP ring, one hop per attention
// block, overlapped with that block (ring attention); all_gather gathers the
// whole sequence's K/V before attention (as Llama 3 trained); a2a
// (DeepSpeed-Ulysses) trades the sequence split for a split of the heads
// with an all-to-all of Q, K, V before attention and of its output after;
// a2a+p2p (hierarchical_context_parallel_sizes [A, B]) runs a2a's
// all-to-alls over inner groups of A ranks and ring attention over outer
// groups of B ranks with 1/A of the heads.
enum class CpCommType { p2p, all_gather, a2a, a2a_p2p };

double dtype_bytes(Dtype dtype);
std::string to_string(Dtype dtype);
std::string to_string(Recompute recompute);
std::string to_string(Fp8Recipe recipe);
std::string to_string(ScheduleKind schedule);
std::string to_string(DpSync sync);
std::string to_string(P2pCommunication p2p);
std::string to_string(MoeDispatcher dispatcher);
std::string to_string(FlexBackend backend);
std::string to_string(CpCommType type);

struct TrainingConfig {
  int64_t seq_length = 0;
  int64_t micro_batch_size = 1;
  int64_t global_batch_size = 0;
  Dtype dtype = Dtype::bf16;
  Recompute recompute = Recompute::none;
  // Full recompute by Megatron's block method (--recompute-method block
  // --recompute-num-layers N): only the first N layers of each model stage
  // (pipeline chunk) are recomputed, the others keep their activations.
  // 0: the uniform method, every layer recomputed from its own input.
  int64_t recompute_block_layers = 0;
  // Selective recompute's submodules, by Megatron's names (--recompute-modules):
  // core_attn (the default, when empty), mlp (a dense layer's MLP), moe_act
  // (the routed experts' activation), layernorm (the norms outside
  // Transformer Engine's fused linears: latent attention's input norm, an MoE
  // layer's pre-MLP norm), mla_up_proj (latent attention's up-projections).
  std::vector<std::string> recompute_modules;
  bool recomputes(const std::string& module) const {
    if (recompute != Recompute::selective) return false;
    if (recompute_modules.empty()) return module == "core_attn";
    return std::find(recompute_modules.begin(), recompute_modules.end(), module) != recompute_modules.end();
  }
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;  // fp8 training only (fp4 training is NVFP4)
  bool flash_attention = true;  // fused attention kernel; false = Megatron's unfused softmax path
  // Megatron's --fp8-param-gather: in fp8 training the linears' weights are
  // kept in fp8 (Transformer Engine's fp8 parameters, with their transpose)
  // instead of bf16 beside a cached fp8 cast.
  bool fp8_param_gather = false;
  double train_tokens = 0;      // the whole run's token budget (0: not given)
  // Mixture of experts: the busiest expert's share of the tokens over the
  // mean (1: balanced, as NeMo's benchmarks force it), and the capacity of
  // an expert in multiples of the mean (0: dropless; Megatron's
  // --moe-expert-capacity-factor), which caps what the busiest one receives.
  double moe_load_imbalance = 1;
  double capacity_factor = 0;
};

struct ParallelConfig {
  int64_t tensor = 1;    // tensor_model_parallel_size
  int64_t pipeline = 1;  // pipeline_model_parallel_size
  int64_t data = 1;      // data_parallel_size (derived from the cluster's GPU count)
  // Context parallelism: each sequence split over `context` ranks (the
  // tensor-parallel ranks vary fastest, then the context-parallel ones, then
  // data, then pipeline: Megatron-Core's tp-cp-dp-pp order), with causal load
  // balancing (each rank holds chunks i and 2·CP−1−i of the sequence).
  int64_t context = 1;  // context_parallel_size
  CpCommType cp_comm_type = CpCommType::p2p;
  // a2a+p2p's hierarchical_context_parallel_sizes: {A, B}, A x B = context,
  // the inner group (A consecutive CP ranks) first; empty for the other types.
  std::vector<int64_t> hierarchical_context;
  bool sequence_parallel = false;
  // Megatron-LM's async tensor-model-parallel all-reduce (default since
  // September 2021, --no-async-tensor-model-parallel-allreduce turns it off;
  // Megatron-Core's ColumnParallelLinear always): without sequence
  // parallelism, a column-parallel linear's input gradient is all-reduced
  // beside its weight-gradient GEMM instead of after it.
  bool async_tp_allreduce = true;
  // Megatron-Core's --tp-comm-overlap (Transformer Engine's userbuffers):
  // with sequence parallelism, the layers' linears run their input gathers,
  // output reduce-scatters and output-gradient gathers beside their GEMMs.
  bool tp_comm_overlap = false;
  int zero_stage = 0;  // 0 none, 1 optimizer state, 2 + gradients, 3 + parameters (FSDP)
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  double dp_bucket_bytes = 0;  // gradient bucket for overlapping DP traffic with backward, in bytes of fp32 gradient
  bool overlap_p2p_communication = false;  // pipeline transfers on their own stream (else they block compute)
  P2pCommunication p2p_communication = P2pCommunication::paired;  // eager where overlap_p2p_communication
  bool overlap_grad_reduce = false;  // reduce buckets during the backward (else after it), as Megatron's flag
  bool grad_reduce_in_bf16 = false;  // Megatron's --grad-reduce-in-bf16: bf16 main grads, reduced in bf16 (else fp32)
  // Megatron's --overlap-param-gather (distributed optimizer): each bucket's
  // weights all-gathered while the forward runs, not after the optimizer.
  bool overlap_param_gather = false;
  DpSync dp_sync = DpSync::auto_;
  // Expert parallelism, as Megatron-Core carves it out of the data-parallel
  // ranks: the routed experts of an MoE layer split over `expert` ranks of
  // consecutive data-parallel index, each expert sharded over
  // expert_tensor ranks (== tensor: the only layout simulated).
  int64_t expert = 1;         // expert_model_parallel_size
  int64_t expert_tensor = 1;  // expert_tensor_parallel_size (default: tensor_model_parallel_size)
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  FlexBackend moe_flex_backend = FlexBackend::deepep;
  // The SMs the flex backend's dispatch and combine kernels run on: Megatron-Core's
  // moe_flex_dispatcher_num_sms; unset, the backend's own default
  // (flex_dispatcher_num_sms in sim/scenario/flex_dispatcher.hpp).
  std::optional<int64_t> moe_flex_dispatcher_num_sms;
  // Megatron's --overlap-moe-expert-parallel-comm: in the 1F1B phase a
  // forward and a backward of different micro-batches run merged, each one's
  // all-to-alls beside the other's compute (warm-up forwards and cool-down
  // backwards keep theirs blocking).
  bool overlap_ep_comm = false;
  int64_t parameter_servers = 1;     // server hosts holding parameter shards (dp_sync parameter_server)
  double dp_compression_ratio = 1;   // gradient traffic is divided by this
  double dp_compression_seconds_per_byte = 1e-12;  // compress, and again decompress, per byte of uncompressed gradient
  // How layers are split over pipeline stages and their virtual stages, as
  // given (Megatron-LM's options; sim/scenario/pipeline_layout.hpp checks
  // them); 0, false or empty where not given.
  int64_t layers_per_virtual_stage = 0;  // num_layers_per_virtual_pipeline_stage
  int64_t virtual_stages_per_rank = 0;   // num_virtual_stages_per_pipeline_rank
  int64_t first_stage_layers = 0;        // decoder_first_pipeline_num_layers
  int64_t last_stage_layers = 0;         // decoder_last_pipeline_num_layers
  bool embedding_in_split = false;       // account_for_embedding_in_pipeline_split
  bool loss_in_split = false;            // account_for_loss_in_pipeline_split
  std::string layer_layout;              // pipeline_model_parallel_layout, e.g. "Et|(tt|)*6,t|tL"
  std::vector<int64_t> pipeline_layers;  // per pipeline rank (even over its chunks) or per virtual stage
  bool balance_pipeline_layers = false;  // pipeline_layers "auto": the partitioner balances stage times
  // What they come to: model chunks per pipeline rank (v), and the layers of
  // each model stage (p x v entries, stage = chunk x p + pipeline rank; empty
  // with "auto", which sim/model/partition.hpp balances).
  int64_t virtual_stages = 1;
  std::vector<int64_t> stage_layers;

  int64_t world_size() const { return tensor * pipeline * data * context; }
  // Megatron's dp_cp group: the ranks holding the same weights, over which
  // gradients are reduced and the distributed optimizer shards its state.
  int64_t data_context() const { return data * context; }
  // The CP ranks a layer's all-to-alls span (its heads split as many ways:
  // context for a2a, A for a2a+p2p, else 1) and those its ring attention (or
  // all_gather) passes K/V around (B for a2a+p2p, 1 for a2a, else context).
  int64_t context_a2a() const;
  int64_t context_ring() const { return context / context_a2a(); }
  // The ranks holding the same experts, over which their gradients are
  // reduced: Megatron-Core carves the EP groups out of the DP x CP ranks of
  // a stage (its expert grid tp-ep-dp-pp, world / (ETP x EP x PP) expert-data-parallel).
  int64_t expert_data() const { return data_context() / expert; }
};

struct ClusterConfig {
  int64_t num_gpus = 0;
  GpuSpec gpu;
  Topology topology;
  std::string kernel_profile;  // kernel-profile database (resolved path); empty: built-in for the GPU, else roofline
  HostLaunchProfile host_launch_profile;  // cluster.host_launch_profile; none: the cited figures (docs/host.md)
  Heterogeneity heterogeneity;
  // The data-parallel gradient reductions' library (cluster.communication_backend)
  // and each rank's GPU vendor where the cluster mixes them (cluster.gpu_vendors; empty: all cluster.gpu's).
  CommunicationBackend communication_backend = CommunicationBackend::nccl;
  std::vector<std::string> gpu_vendors;
  // USD, for cost figures: cluster.price_per_gpu_hour, else the GPU's rental
  // price (GpuSpec::rental_usd_per_gpu_hour; default_price says so), else 0.
  double price_per_gpu_hour = 0;
  bool default_price = false;
  // What each training process holds beyond the tensors the memory model
  // counts (CUDA context, NCCL buffers, GEMM workspaces): cluster.memory_reserve_GiB,
  // in bytes; negative where not given (the default of sim/step/memory_reserve.hpp).
  double memory_reserve_bytes = -1;
};

struct Scenario {
  std::string name;
  std::string source;  // the file it was read from, for error messages
  std::vector<std::string> files_read;  // every file of the user's it came from: scenario, model config, topology, kernel profile
  ModelConfig model;
  TrainingConfig training;
  ParallelConfig parallel;
  ClusterConfig cluster;
  RunConfig run;              // failures and checkpoints, for long runs
  HostSettings software;      // what the training software launches how (the "software" section)
  nlohmann::json document;  // the scenario as read, with overrides applied

  // Model chunks per pipeline rank (v); 1 unless interleaved.
  int64_t virtual_stages() const;
  // Micro-batches per pipeline per step (m).
  int64_t micro_batches() const;
};

// Reads a scenario file (or a built-in scenario by name); `overrides` are `key=value` strings (`--set`), where
// key is a field name (searched in every section) or a dotted path.
// Throws InputError naming file, field and reason.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
Scenario parse_scenario(const nlohmann::json& document, const std::string& source,
                        const std::string& base_dir, const std::vector<std::string>& overrides = {});

// The scenario `simtrain simulate` runs when given none; every file of
// scenarios/ is compiled into the binary and can be named without its path.
const char* default_scenario_name();

}  // namespace simtrain
