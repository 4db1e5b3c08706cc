#include "sim/scenario/scenario.hpp"

#include <algorithm>
#include <filesystem>

#include "sim/base/embedded_files.hpp"
#include "sim/base/enum_named.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/text_format.hpp"
#include "sim/scenario/pipeline_layout.hpp"
#include "sim/scenario/rank_layout.hpp"
#include "sim/scenario/scenario_limits.hpp"

namespace simtrain {

double dtype_bytes(Dtype dtype) { return dtype == Dtype::fp4 ? 0.5 : dtype == Dtype::fp8 ? 1 : 2; }

std::string to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
    case Dtype::fp4: return "fp4";
  }
  return "?";
}

std::string to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

std::string to_string(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::delayed: return "delayed";
    case Fp8Recipe::tensorwise: return "tensorwise";
    case Fp8Recipe::mxfp8: return "mxfp8";
  }
  return "?";
}

std::string to_string(ScheduleKind schedule) {
  switch (schedule) {
    case ScheduleKind::gpipe: return "gpipe";
    case ScheduleKind::one_f_one_b: return "1f1b";
    case ScheduleKind::interleaved_1f1b: return "interleaved_1f1b";
    case ScheduleKind::zb_h1: return "zb_h1";
    case ScheduleKind::dualpipe: return "dualpipe";
    case ScheduleKind::dualpipe_v: return "dualpipe_v";
  }
  return "?";
}

bool splits_backward(ScheduleKind schedule) {
  return schedule == ScheduleKind::zb_h1 || schedule == ScheduleKind::dualpipe || schedule == ScheduleKind::dualpipe_v;
}

std::string to_string(P2pCommunication p2p) { return p2p == P2pCommunication::paired ? "paired" : "eager"; }

std::string to_string(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::alltoall: return "alltoall";
    case MoeDispatcher::allgather: return "allgather";
    case MoeDispatcher::flex: return "flex";
  }
  return "alltoall";
}

std::string to_string(FlexBackend backend) { return backend == FlexBackend::deepep ? "deepep" : "hybridep"; }

int64_t ParallelConfig::context_a2a() const {
  switch (cp_comm_type) {
    case CpCommType::a2a: return context;
    case CpCommType::a2a_p2p: return hierarchical_context.empty() ? 1 : hierarchical_context[0];
    case CpCommType::p2p:
    case CpCommType::all_gather: return 1;
  }
  return 1;
}

std::string to_string(CpCommType type) {
  switch (type) {
    case CpCommType::p2p: return "p2p";
    case CpCommType::all_gather: return "all_gather";
    case CpCommType::a2a: return "a2a";
    case CpCommType::a2a_p2p: return "a2a+p2p";
  }
  return "?";
}

std::string to_string(DpSync sync) {
  switch (sync) {
    case DpSync::auto_: return "auto";
    case DpSync::ring: return "ring";
    case DpSync::tree: return "tree";
    case DpSync::hierarchical: return "hierarchical";
    case DpSync::parameter_server: return "parameter_server";
  }
  return "?";
}

int64_t Scenario::virtual_stages() const { return parallel.virtual_stages; }

int64_t Scenario::micro_batches() const {
  return training.global_batch_size / (training.micro_batch_size * parallel.data);
}

namespace {

// The fields of each section, in the order the README documents them. `--set`
// uses these lists to find where a bare key belongs.
const std::vector<std::string> model_keys = {
    "name", "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "intermediate_size", "vocab_size", "max_position_embeddings", "hidden_act", "norm", "linear_bias",
    "position_embedding", "tie_word_embeddings", "hidden_dropout", "attention_dropout"};
const std::vector<std::string> training_keys = {"seq_length",    "micro_batch_size",      "global_batch_size",
                                                "dtype",         "fp8_recipe",            "fp4_recipe",
                                                "recompute_granularity",
                                                "recompute_method", "recompute_num_layers", "recompute_modules",
                                                "flash_attention", "train_tokens",          "moe_load_imbalance",
                                                "capacity_factor", "fp8_param_gather"};
const std::vector<std::string> parallelism_keys = {
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "data_parallel_size",
    "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank", "sequence_parallel",
    "async_tensor_model_parallel_allreduce", "tp_comm_overlap", "zero_stage",
    "schedule", "ddp_bucket_size", "overlap_p2p_communication", "p2p_communication", "overlap_grad_reduce",
    "grad_reduce_in_bf16", "overlap_param_gather", "dp_sync", "parameter_servers", "dp_compression_ratio",
    "dp_compression_seconds_per_GB", "pipeline_layers", "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
    "pipeline_model_parallel_layout", "expert_model_parallel_size", "expert_tensor_parallel_size",
    "moe_token_dispatcher_type", "moe_flex_dispatcher_backend", "moe_flex_dispatcher_num_sms",
    "overlap_moe_expert_parallel_comm", "context_parallel_size", "cp_comm_type",
    "hierarchical_context_parallel_sizes"};
const std::vector<std::string> cluster_keys = {"gpu", "num_gpus", "topology", "kernel_profile", "host_launch_profile", "gpu_speed_factors", "stragglers",
                                               "link_bandwidth_factors", "price_per_gpu_hour", "memory_reserve_GiB",
                                               "communication_backend", "gpu_vendors"};
const std::vector<std::string> top_level_keys = {"name",        "description", "model",       "training",
                                                 "parallelism", "cluster",     "software",    "reliability",
                                                 "checkpoint"};

struct Section {
  const char* name;
  const std::vector<std::string>* keys;
};
const Section sections[] = {{"model", &model_keys},
                            {"training", &training_keys},
                            {"parallelism", &parallelism_keys},
                            {"cluster", &cluster_keys},
                            {"software", &host_settings_keys()}};

bool contains(const std::vector<std::string>& keys, const std::string& key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

nlohmann::json parse_override_value(const std::string& text, const std::string& file, const std::string& key) {
  try {
    return parse_json(text, file, "--set " + key);
  } catch (const nlohmann::json::exception&) {
    return text;  // bare words such as 1f1b or H100-SXM
  }
}

// Applies `key=value` to the document; a model given as a path is resolved
// first so that model fields can be overridden too, and so is a topology
// given by name or path (cluster.topology.nic_Gbps=800: the named system with
// other NICs).
void apply_override(nlohmann::json& document, const std::string& assignment, const std::string& file,
                    const std::string& base_dir, std::vector<std::string>& files_read) {
  try {
    static_cast<void>(nlohmann::json(assignment).dump());  // the report holds the document as JSON
  } catch (const nlohmann::json::type_error&) {
    throw InputError(file, "--set", "not valid UTF-8");
  }
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0)
    throw InputError(file, "--set " + assignment, "expected key=value");
  const std::string key = assignment.substr(0, equals);
  const nlohmann::json value = parse_override_value(assignment.substr(equals + 1), file, key);

  nlohmann::json* target = &document;
  std::string leaf = key;
  if (key.find('.') != std::string::npos) {
    size_t start = 0, dot;
    while ((dot = key.find('.', start)) != std::string::npos) {
      nlohmann::json& next = (*target)[key.substr(start, dot - start)];
      if (next.is_null()) next = nlohmann::json::object();
      if (next.is_string() && key.substr(0, dot) == "cluster.topology") {
        std::string path_read;
        next = topology_document(next.get<std::string>(), file, "cluster.topology", base_dir, path_read);
        if (!path_read.empty()) files_read.push_back(path_read);
      }
      if (!next.is_object()) throw InputError(file, "--set " + key, "'" + key.substr(0, dot) + "' is not an object");
      target = &next;
      start = dot + 1;
    }
    leaf = key.substr(start);
  } else if (!contains(top_level_keys, key)) {
    const Section* home = nullptr;
    for (const Section& section : sections)
      if (contains(*section.keys, key)) home = &section;
    if (!home) {
      std::vector<std::string> known = top_level_keys;
      for (const Section& section : sections) known.insert(known.end(), section.keys->begin(), section.keys->end());
      throw InputError(file, "--set " + key, "unknown field" + did_you_mean(key, known));
    }
    nlohmann::json& section = document[home->name];
    if (section.is_null()) section = nlohmann::json::object();
    if (!section.is_object()) throw InputError(file, "--set " + key, std::string(home->name) + " is not an object");
    target = &section;
  }
  (*target)[leaf] = value;
}

// Megatron's --recompute-method and --recompute-num-layers, for full recompute:
// uniform recomputes every layer (simulated for groups of one layer, each
// from its own input), block the first N layers of each model stage.
void parse_recompute_method(JsonFields& f, TrainingConfig& t) {
  const std::optional<std::string> method = f.choice("recompute_method", {"uniform", "block"});
  const std::optional<int64_t> layers = f.integer("recompute_num_layers", 1);
  if ((method || layers) && t.recompute != Recompute::full)
    f.fail(method ? "recompute_method" : "recompute_num_layers", "only applies to recompute_granularity full");
  if (method == "block") {
    if (!layers)
      f.fail("recompute_num_layers", "missing: recompute_method block recomputes the first N layers of each model stage");
    t.recompute_block_layers = *layers;
  } else if (layers && *layers != 1) {
    f.fail("recompute_num_layers", "uniform recompute of groups of " + std::to_string(*layers) +
                                       " layers is not simulated (each layer is recomputed from its own input): "
                                       "give 1, or recompute_method block");
  }
}

// Megatron's --recompute-modules, for selective recompute: the submodules
// recomputed (core_attn, Megatron's default, when not given); an empty list
// recomputes nothing. moe and shared_experts (whole MoE layers or shared
// experts checkpointed) are not simulated.
void parse_recompute_modules(JsonFields& f, TrainingConfig& t) {
  const std::string field = "recompute_modules";
  if (!f.has(field)) return;
  if (t.recompute != Recompute::selective) f.fail(field, "only applies to recompute_granularity selective");
  const nlohmann::json& modules = f.raw(field);
  if (!modules.is_array()) f.fail(field, "expected a list of module names, got " + modules.dump());
  const std::vector<std::string> known = {"core_attn", "moe_act", "layernorm", "mla_up_proj",
                                          "mlp",       "moe",     "shared_experts"};
  for (const nlohmann::json& module : modules) {
    const std::string name = module.is_string() ? module.get<std::string>() : module.dump();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string names;
      for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
      f.fail(field, "expected module names among " + names + ", got " + module.dump());
    }
    if (name == "moe" || name == "shared_experts")
      f.fail(field, "recomputing " + name + " is not simulated");
    if (std::find(t.recompute_modules.begin(), t.recompute_modules.end(), name) == t.recompute_modules.end())
      t.recompute_modules.push_back(name);
  }
  if (modules.empty()) t.recompute = Recompute::none;
}

TrainingConfig parse_training(const nlohmann::json& document, const std::string& file) {
  JsonFields f(document, file, "training.");
  TrainingConfig t;
  t.seq_length = f.required_integer("seq_length");
  t.micro_batch_size = f.integer("micro_batch_size").value_or(1);
  t.global_batch_size = f.required_integer("global_batch_size");
  const std::string dtype = f.choice("dtype", {"bf16", "fp16", "fp8", "fp4"}).value_or("bf16");
  t.dtype = dtype == "fp4" ? Dtype::fp4 : dtype == "fp8" ? Dtype::fp8 : dtype == "fp16" ? Dtype::fp16 : Dtype::bf16;
  if (const auto recipe = f.choice("fp8_recipe", {"delayed", "tensorwise", "mxfp8"})) {
    if (t.dtype != Dtype::fp8) f.fail("fp8_recipe", "is for fp8 training (training.dtype \"fp8\"), got dtype " + dtype);
    t.fp8_recipe = *recipe == "mxfp8" ? Fp8Recipe::mxfp8 : *recipe == "tensorwise" ? Fp8Recipe::tensorwise : Fp8Recipe::delayed;
  }
  // Megatron's --fp4-recipe: nvfp4 is the one fp4 recipe simulated (and the default).
  if (f.choice("fp4_recipe", {"nvfp4"}) && t.dtype != Dtype::fp4)
    f.fail("fp4_recipe", "is for fp4 training (training.dtype \"fp4\"), got dtype " + dtype);
  const std::string recompute = f.choice("recompute_granularity", {"none", "selective", "full"}).value_or("none");
  t.recompute = recompute == "full" ? Recompute::full : recompute == "selective" ? Recompute::selective : Recompute::none;
  parse_recompute_method(f, t);
  parse_recompute_modules(f, t);
  t.flash_attention = f.boolean("flash_attention").value_or(true);
  t.fp8_param_gather = f.boolean("fp8_param_gather").value_or(false);
  if (t.fp8_param_gather && t.dtype != Dtype::fp8)
    f.fail("fp8_param_gather", "is for fp8 training (training.dtype \"fp8\"), got dtype " + dtype);
  t.train_tokens = f.number("train_tokens", 1).value_or(0);
  t.moe_load_imbalance = f.number("moe_load_imbalance", 1).value_or(1);
  t.capacity_factor = f.number("capacity_factor", 1e-9).value_or(0);  // null or absent, as Megatron's default: dropless
  f.reject_unknown();
  return t;
}

// hierarchical_context_parallel_sizes: required by a2a+p2p, refused by the other types.
void parse_hierarchical_context(JsonFields& f, ParallelConfig& p) {
  const std::string field = "hierarchical_context_parallel_sizes";
  if (p.cp_comm_type != CpCommType::a2a_p2p) {
    if (f.has(field)) f.fail(field, "is only used with cp_comm_type a2a+p2p, not " + to_string(p.cp_comm_type));
    return;
  }
  if (!f.has(field)) f.fail(field, "missing: cp_comm_type a2a+p2p needs the inner and outer CP group sizes [A, B]");
  const nlohmann::json& sizes = f.raw(field);
  const auto positive = [](const nlohmann::json& size) {
    return size.is_number_integer() && size.get<int64_t>() >= 1 && size.get<int64_t>() <= limits::max_integer;
  };
  if (!sizes.is_array() || sizes.size() != 2 || !positive(sizes[0]) || !positive(sizes[1]))
    f.fail(field, "expected two positive integers [A, B] (the inner all-to-all and the outer ring group sizes), got " +
                      sizes.dump());
  p.hierarchical_context = {sizes[0].get<int64_t>(), sizes[1].get<int64_t>()};
  if (p.hierarchical_context[0] * p.hierarchical_context[1] != p.context)
    f.fail(field, sizes.dump() + ": their product must be context_parallel_size (" + std::to_string(p.context) + ")");
}

// moe_token_dispatcher_type, and the flex dispatcher's backend and SMs as
// Megatron-Core's TransformerConfig names them (NVIDIA/Megatron-LM d98e8a64,
// transformer_config.py: moe_flex_dispatcher_backend, moe_flex_dispatcher_num_sms).
void parse_moe_dispatcher(JsonFields& f, ParallelConfig& p) {
  const std::string dispatcher =
      f.choice("moe_token_dispatcher_type", {"alltoall", "allgather", "flex"}).value_or("alltoall");
  p.moe_dispatcher = *enum_named(dispatcher, MoeDispatcher::flex);
  const bool flex = p.moe_dispatcher == MoeDispatcher::flex;
  for (const char* field : {"moe_flex_dispatcher_backend", "moe_flex_dispatcher_num_sms"})
    if (!flex && f.has(field)) f.fail(field, "is only used with moe_token_dispatcher_type flex, not " + dispatcher);
  const std::string backend =
      f.choice("moe_flex_dispatcher_backend", {"deepep", "hybridep", "ncclep"}).value_or("deepep");
  if (backend == "ncclep")
    f.fail("moe_flex_dispatcher_backend",
           backend + " is not modelled: only DeepEP's (deepep) and HybridEP's (hybridep) dispatch and combine are");
  p.moe_flex_backend = *enum_named(backend, FlexBackend::hybridep);
  p.moe_flex_dispatcher_num_sms = f.integer("moe_flex_dispatcher_num_sms");
  if (p.moe_flex_dispatcher_num_sms && *p.moe_flex_dispatcher_num_sms < 1)
    f.fail("moe_flex_dispatcher_num_sms", "must be at least 1, got " + std::to_string(*p.moe_flex_dispatcher_num_sms));
  // DeepEP's Buffer.set_num_sms asserts it (deepseek-ai/DeepEP 567632dd,
  // deep_ep/buffer.py); HybridEP's Configurer asks only for no more than the
  // GPU has (DeepEP hybrid-ep 94a9f8f6, csrc/hybrid_ep/config.cuh).
  if (p.moe_flex_backend == FlexBackend::deepep && p.moe_flex_dispatcher_num_sms.value_or(0) % 2 != 0)
    f.fail("moe_flex_dispatcher_num_sms", "must be even, as DeepEP's Buffer.set_num_sms asserts, got " +
                                              std::to_string(*p.moe_flex_dispatcher_num_sms));
}

ParallelConfig parse_parallelism(const nlohmann::json& document, const std::string& file) {
  JsonFields f(document, file, "parallelism.");
  ParallelConfig p;
  p.tensor = f.integer("tensor_model_parallel_size").value_or(1);
  p.pipeline = f.integer("pipeline_model_parallel_size").value_or(1);
  p.data = f.integer("data_parallel_size").value_or(0);
  parse_pipeline_layout(f, file, p);
  p.sequence_parallel = f.boolean("sequence_parallel").value_or(false);
  p.async_tp_allreduce = f.boolean("async_tensor_model_parallel_allreduce").value_or(true);
  p.tp_comm_overlap = f.boolean("tp_comm_overlap").value_or(false);
  if (p.tp_comm_overlap && !p.sequence_parallel)
    f.fail("tp_comm_overlap", "overlaps sequence parallelism's gathers and reduce-scatters with the linears' GEMMs: "
                              "needs sequence_parallel, as in Megatron-LM");
  p.zero_stage = static_cast<int>(f.integer("zero_stage", 0).value_or(0));
  if (p.zero_stage > 3) f.fail("zero_stage", "must be 0, 1, 2 or 3");
  const std::string default_schedule = gives_virtual_stages(p) ? "interleaved_1f1b" : "1f1b";
  const std::string schedule =
      f.choice("schedule", {"gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "dualpipe", "dualpipe_v"})
          .value_or(default_schedule);
  p.schedule = schedule == "gpipe"              ? ScheduleKind::gpipe
               : schedule == "interleaved_1f1b" ? ScheduleKind::interleaved_1f1b
               : schedule == "zb_h1"            ? ScheduleKind::zb_h1
               : schedule == "dualpipe"         ? ScheduleKind::dualpipe
               : schedule == "dualpipe_v"       ? ScheduleKind::dualpipe_v
                                                : ScheduleKind::one_f_one_b;
  if (p.schedule == ScheduleKind::interleaved_1f1b && !gives_virtual_stages(p))
    f.fail("schedule", "interleaved_1f1b needs num_layers_per_virtual_pipeline_stage, num_virtual_stages_per_pipeline_rank "
                       "or a pipeline_model_parallel_layout of more stages than pipeline ranks");
  // DualPipeV cuts the model into 2 x PP stages, two per rank in a V
  // (deepseek-ai/DualPipe, dualpipe/dualpipev.py): two chunks per rank, given or not.
  if (p.schedule == ScheduleKind::dualpipe_v) {
    if (p.layers_per_virtual_stage || (gives_virtual_stages(p) && p.virtual_stages != 2))
      f.fail("schedule", "dualpipe_v runs two model chunks per pipeline rank; give num_virtual_stages_per_pipeline_rank "
                         "2, or a pipeline_model_parallel_layout of 2 x pipeline_model_parallel_size stages, or neither");
    p.virtual_stages = 2;
  }
  if (p.schedule != ScheduleKind::interleaved_1f1b && p.schedule != ScheduleKind::dualpipe_v) {
    if (p.layers_per_virtual_stage)
      f.fail("num_layers_per_virtual_pipeline_stage", "is only used by the interleaved_1f1b schedule, not " + schedule);
    if (p.virtual_stages_per_rank)
      f.fail("num_virtual_stages_per_pipeline_rank", "is only used by the interleaved_1f1b schedule, not " + schedule);
    if (p.virtual_stages > 1)
      f.fail("pipeline_model_parallel_layout", "has " + std::to_string(p.virtual_stages) +
                                                   " stages per pipeline rank, which only interleaved_1f1b runs, not " + schedule);
  }
  p.dp_bucket_bytes = f.number("ddp_bucket_size", 1).value_or(0) * 4;  // elements of fp32 gradient
  p.overlap_p2p_communication = f.boolean("overlap_p2p_communication").value_or(false);
  // Transfers on their own stream block nothing: they are eager (the
  // rendezvous of Megatron's overlapped calls is not modelled).
  const std::string p2p = f.choice("p2p_communication", {"paired", "eager"})
                              .value_or(p.overlap_p2p_communication ? "eager" : "paired");
  if (p2p == "paired" && p.overlap_p2p_communication)
    f.fail("p2p_communication", "paired blocks the compute stream; overlap_p2p_communication needs eager");
  p.p2p_communication = p2p == "paired" ? P2pCommunication::paired : P2pCommunication::eager;
  p.overlap_grad_reduce = f.boolean("overlap_grad_reduce").value_or(false);
  p.grad_reduce_in_bf16 = f.boolean("grad_reduce_in_bf16").value_or(false);
  p.overlap_param_gather = f.boolean("overlap_param_gather").value_or(false);
  // Megatron's own checks (megatron/training/arguments.py).
  if (p.overlap_param_gather && p.zero_stage != 1 && p.zero_stage != 2)
    f.fail("overlap_param_gather", "overlaps the distributed optimizer's weight all-gather: needs zero_stage 1 or 2, got " +
                                       std::to_string(p.zero_stage));
  if (p.overlap_param_gather && !p.overlap_grad_reduce)
    f.fail("overlap_param_gather", "needs overlap_grad_reduce, as in Megatron-LM");
  const std::vector<std::string> syncs = {"auto", "ring", "tree", "hierarchical", "parameter_server"};
  const std::string sync = f.choice("dp_sync", syncs).value_or("auto");
  p.dp_sync = static_cast<DpSync>(std::find(syncs.begin(), syncs.end(), sync) - syncs.begin());
  if (f.has("parameter_servers") && p.dp_sync != DpSync::parameter_server)
    f.fail("parameter_servers", "is only used by dp_sync parameter_server, not " + sync);
  p.parameter_servers = f.integer("parameter_servers").value_or(1);
  p.expert = f.integer("expert_model_parallel_size").value_or(1);
  p.expert_tensor = f.integer("expert_tensor_parallel_size").value_or(p.tensor);  // Megatron's default
  parse_moe_dispatcher(f, p);
  p.overlap_ep_comm = f.boolean("overlap_moe_expert_parallel_comm").value_or(false);
  p.context = f.integer("context_parallel_size").value_or(1);
  if (p.context == 1 && f.has("cp_comm_type")) f.fail("cp_comm_type", "is only used with context_parallel_size > 1");
  const std::vector<std::string> cp_comm_types = {"p2p", "all_gather", "a2a", "a2a+p2p"};
  const std::string cp_comm_type = f.choice("cp_comm_type", cp_comm_types).value_or("p2p");
  p.cp_comm_type = static_cast<CpCommType>(std::find(cp_comm_types.begin(), cp_comm_types.end(), cp_comm_type) -
                                           cp_comm_types.begin());
  parse_hierarchical_context(f, p);
  p.dp_compression_ratio = f.number("dp_compression_ratio", 1).value_or(1);
  p.dp_compression_seconds_per_byte = f.number("dp_compression_seconds_per_GB").value_or(1e-3) / 1e9;
  f.reject_unknown();
  return p;
}

// Throws the InputError of one consistency rule, naming the field a user would change.
struct RuleBroken {
  const std::string& file;
  [[noreturn]] void operator()(const std::string& field, const std::string& reason) const {
    throw InputError(file, field, reason);
  }
};

std::string str(int64_t v) { return std::to_string(v); }

void check_tensor_split(const ModelConfig& m, const ParallelConfig& p, const RuleBroken& fail) {
  if (m.num_attention_heads % p.tensor != 0)
    fail("parallelism.tensor_model_parallel_size", "must divide num_attention_heads (" +
                                                       str(m.num_attention_heads) + "), got " + str(p.tensor));
  if (m.num_key_value_heads % p.tensor != 0)
    fail("parallelism.tensor_model_parallel_size", "must divide num_key_value_heads (" +
                                                       str(m.num_key_value_heads) + "), got " + str(p.tensor));
  if (m.intermediate_size % p.tensor != 0)
    fail("parallelism.tensor_model_parallel_size",
         "must divide intermediate_size (" + str(m.intermediate_size) + "), got " + str(p.tensor));
}

// Fills in the data-parallel size and the default bucket size.
void check_data_parallel(Scenario& s, const RuleBroken& fail) {
  ParallelConfig& p = s.parallel;
  const int64_t model_parallel = p.tensor * p.pipeline * p.context;
  const std::string sizes = p.context > 1 ? "tensor x pipeline x context" : "tensor x pipeline";
  if (s.cluster.num_gpus % model_parallel != 0)
    fail("cluster.num_gpus", "must be a multiple of " + sizes + " parallel size (" + str(model_parallel) + "), got " +
                                 str(s.cluster.num_gpus));
  const int64_t data = s.cluster.num_gpus / model_parallel;
  if (p.data && p.data != data)
    fail("parallelism.data_parallel_size", "is " + str(p.data) + " but num_gpus / (" + sizes + ") = " + str(data));
  p.data = data;
  if (p.zero_stage > 0 && p.dp_sync != DpSync::auto_ && p.dp_sync != DpSync::ring)
    fail("parallelism.dp_sync", to_string(p.dp_sync) + " synchronises with all-reduce, but zero_stage " + str(p.zero_stage) +
                                     " reduce-scatters gradients (use ring or auto)");
  const int64_t gpus_per_node = s.cluster.topology.gpus_per_node, dp_span = p.tensor * p.data_context();
  const bool nodes_share_evenly = p.tensor % gpus_per_node == 0 || gpus_per_node % dp_span == 0 ||
                                  (gpus_per_node % p.tensor == 0 && dp_span % gpus_per_node == 0);
  if (p.dp_sync == DpSync::hierarchical && !nodes_share_evenly)
    fail("parallelism.dp_sync", "hierarchical needs every node to hold as many ranks of each data-parallel group as "
                                 "the others (tensor x data parallel size " + str(dp_span) + " against " +
                                 str(gpus_per_node) + " GPUs per node)");
  if (p.dp_sync == DpSync::parameter_server && s.cluster.topology.kind != TopologyKind::fat_tree)
    fail("parallelism.dp_sync", "parameter servers attach to the core of a fat tree; topology '" +
                                     s.cluster.topology.name + "' is not one");
  if (p.dp_bucket_bytes == 0) p.dp_bucket_bytes = std::max<double>(40e6, 1e6 * p.data_context()) * 4;  // Megatron's default
}

// overlap_moe_expert_parallel_comm as Megatron-Core's TransformerConfig
// checks it (megatron/core/transformer/transformer_config.py).
void check_expert_comm_overlap(const Scenario& s, const RuleBroken& fail) {
  const ParallelConfig& p = s.parallel;
  if (!p.overlap_ep_comm) return;
  const std::string field = "parallelism.overlap_moe_expert_parallel_comm";
  if (p.expert == 1) fail(field, "needs expert_model_parallel_size > 1");
  if (p.moe_dispatcher == MoeDispatcher::allgather) fail(field, "needs moe_token_dispatcher_type alltoall or flex");
  if (p.pipeline > 1 && p.schedule != ScheduleKind::interleaved_1f1b)
    fail(field, "needs the interleaved_1f1b schedule when pipeline_model_parallel_size > 1 (Megatron-LM asks for a "
                "virtual pipeline size), not " + to_string(p.schedule));
  if (s.training.recompute == Recompute::full) fail(field, "does not run with recompute_granularity full");
}

// Megatron-Core's rules for expert parallelism (megatron/training/arguments.py,
// parallel_state.py), and what simtrain does not simulate with it yet.
void check_experts(const Scenario& s, const RuleBroken& fail) {
  const ModelConfig& m = s.model;
  const ParallelConfig& p = s.parallel;
  const TrainingConfig& t = s.training;
  if (!m.has_experts()) {
    if (p.expert > 1) fail("parallelism.expert_model_parallel_size", "needs a model with experts, got " + str(p.expert));
    if (t.moe_load_imbalance != 1) fail("training.moe_load_imbalance", "needs a model with experts");
    if (t.capacity_factor) fail("training.capacity_factor", "needs a model with experts");
    return;
  }
  if (p.expert_tensor != p.tensor)
    fail("parallelism.expert_tensor_parallel_size", "only expert_tensor_parallel_size = tensor_model_parallel_size (" +
                                                        str(p.tensor) + ") is simulated, got " + str(p.expert_tensor));
  if (p.data_context() % p.expert != 0) {
    const bool with_cp = p.context > 1;
    fail("parallelism.expert_model_parallel_size",
         std::string("must divide the ") + (with_cp ? "data-parallel x context-parallel" : "data-parallel") +
             " size (" + str(p.data_context()) + "): expert-parallel groups are carved out of " +
             (with_cp ? "them" : "it") + ", got " + str(p.expert));
  }
  if (m.num_experts % p.expert != 0)
    fail("parallelism.expert_model_parallel_size",
         "must divide the number of experts (" + str(m.num_experts) + "), got " + str(p.expert));
  if (m.moe_intermediate_size % p.tensor != 0 || m.shared_expert_intermediate_size % p.tensor != 0)
    fail("parallelism.tensor_model_parallel_size", "must divide moe_intermediate_size (" + str(m.moe_intermediate_size) +
                                                       ") and shared_expert_intermediate_size (" +
                                                       str(m.shared_expert_intermediate_size) + "), got " + str(p.tensor));
  if (p.expert > 1 && p.tensor > 1 && !p.sequence_parallel)
    fail("parallelism.sequence_parallel", "expert and tensor parallelism together need sequence parallelism, as in Megatron");
  // MoEFlexTokenDispatcher asserts it for DeepEP, not for HybridEP (Megatron-LM
  // d98e8a64, moe/token_dispatcher.py __init__).
  if (p.moe_dispatcher == MoeDispatcher::flex && p.moe_flex_backend == FlexBackend::deepep && p.tensor * p.expert == 1)
    fail("parallelism.moe_token_dispatcher_type",
         "flex (DeepEP) needs tensor x expert model parallel size > 1, as Megatron-Core asserts, got 1");
  // HybridEPBuffer asserts its group splits evenly over NVLink domains
  // (deepseek-ai/DeepEP hybrid-ep 94a9f8f6, deep_ep/hybrid_ep_buffer.py).
  const int64_t gpus_per_node = s.cluster.topology.gpus_per_node;
  if (p.moe_dispatcher == MoeDispatcher::flex && p.moe_flex_backend == FlexBackend::hybridep &&
      p.tensor * p.expert > gpus_per_node && expert_group_nodes(p, gpus_per_node) == 1)
    fail("parallelism.moe_flex_dispatcher_backend",
         "hybridep needs the tensor x expert group (" + str(p.tensor * p.expert) +
             " ranks) to fill whole nodes evenly, as HybridEPBuffer asserts, with " + str(gpus_per_node) +
             " GPUs a node");
  check_expert_comm_overlap(s, fail);
  if (p.expert == 1) return;
  const auto not_with_experts = [&](const std::string& field, const std::string& setting) {
    fail(field, setting + " is not simulated with expert parallelism yet");
  };
  if (p.dp_sync == DpSync::hierarchical || p.dp_sync == DpSync::parameter_server)
    not_with_experts("parallelism.dp_sync", "dp_sync " + to_string(p.dp_sync));
  if (p.dp_compression_ratio != 1) not_with_experts("parallelism.dp_compression_ratio", "gradient compression");
}

// Context parallelism as Megatron-Core and Transformer Engine run it, and
// what simtrain does not simulate with it yet.
void check_context_parallel(const Scenario& s, const RuleBroken& fail) {
  const ParallelConfig& p = s.parallel;
  if (p.context == 1) return;
  const auto not_with_cp = [&](const std::string& field, const std::string& reason) {
    fail(field, reason + " is not simulated with context parallelism (context_parallel_size " + str(p.context) + ") yet");
  };
  if (s.training.seq_length % (2 * p.context) != 0)
    fail("training.seq_length", "must be a multiple of 2 x context_parallel_size (" + str(2 * p.context) +
                                    "): the load-balanced split gives each rank two chunks, got " + str(s.training.seq_length));
  if (!s.training.flash_attention)
    fail("training.flash_attention", "context parallelism runs Transformer Engine's fused attention: needs flash_attention");
  if (p.context_a2a() > 1) {
    // Transformer Engine's all-to-all (flash_attn_a2a_communicate) asserts it: each rank of
    // the all-to-all group takes an equal share of the TP rank's heads.
    const int64_t heads = s.model.num_attention_heads / p.tensor;
    const int64_t kv_heads = (s.model.has_latent_attention() ? s.model.num_attention_heads : s.model.num_key_value_heads) / p.tensor;
    const bool hierarchical = p.cp_comm_type == CpCommType::a2a_p2p;
    if (heads % p.context_a2a() != 0 || kv_heads % p.context_a2a() != 0)
      fail(hierarchical ? "parallelism.hierarchical_context_parallel_sizes" : "parallelism.cp_comm_type",
           to_string(p.cp_comm_type) + " splits each TP rank's heads over the " +
               (hierarchical ? "inner CP group: its size " : "CP ranks: context_parallel_size ") +
               str(p.context_a2a()) + " must divide its " + str(heads) + " attention heads and " + str(kv_heads) +
               " key-value heads");
  }
  if (p.dp_sync == DpSync::hierarchical || p.dp_sync == DpSync::parameter_server)
    not_with_cp("parallelism.dp_sync", "dp_sync " + to_string(p.dp_sync));
}

void check_batch_and_precision(const Scenario& s, const RuleBroken& fail) {
  const ModelConfig& m = s.model;
  const ParallelConfig& p = s.parallel;
  const TrainingConfig& t = s.training;
  if (t.global_batch_size % (t.micro_batch_size * p.data) != 0)
    fail("training.global_batch_size", "must be a multiple of micro_batch_size x data parallel size (" +
                                           str(t.micro_batch_size) + " x " + str(p.data) + "), got " +
                                           str(t.global_batch_size));
  if (p.schedule == ScheduleKind::interleaved_1f1b && s.micro_batches() % p.pipeline != 0)
    fail("training.global_batch_size", "interleaved_1f1b needs the micro-batches per pipeline (" +
                                           str(s.micro_batches()) + ") to be a multiple of pipeline_model_parallel_size (" +
                                           str(p.pipeline) + ")");
  // deepseek-ai/DualPipe at 3da1bbe: dualpipe/dualpipe.py:332-333 asserts an
  // even rank count and an even micro-batch count of at least twice the
  // ranks (half enter from each end); dualpipe/dualpipev.py:318 the latter's
  // lower bound alone.
  const bool dual = p.schedule == ScheduleKind::dualpipe || p.schedule == ScheduleKind::dualpipe_v;
  if (p.schedule == ScheduleKind::dualpipe && p.pipeline % 2 != 0)
    fail("parallelism.pipeline_model_parallel_size",
         "dualpipe needs an even pipeline size (micro-batches enter from both ends), got " + str(p.pipeline));
  if (dual && (s.micro_batches() < 2 * p.pipeline || (p.schedule == ScheduleKind::dualpipe && s.micro_batches() % 2)))
    fail("training.global_batch_size", to_string(p.schedule) + " needs " +
                                           (p.schedule == ScheduleKind::dualpipe ? "an even number of " : "") +
                                           "micro-batches per pipeline, at least twice pipeline_model_parallel_size (" +
                                           str(2 * p.pipeline) + "), got " + str(s.micro_batches()));
  if (m.learned_position_embeddings && m.max_position_embeddings && t.seq_length > m.max_position_embeddings)
    fail("training.seq_length", "exceeds the model's max_position_embeddings (" + str(m.max_position_embeddings) + ")");
  if (p.grad_reduce_in_bf16 && t.dtype == Dtype::fp16)
    fail("parallelism.grad_reduce_in_bf16", "is for bf16 or fp8 training, not fp16");
  if (t.dtype == Dtype::fp8 && s.cluster.gpu.peak_fp8_flops == 0)
    fail("training.dtype", "fp8 is not supported by GPU " + s.cluster.gpu.name);
  // Block-scaled formats need Blackwell's tensor cores, which come with fp4: a GPU states an fp4 peak.
  if (t.dtype == Dtype::fp4 && s.cluster.gpu.peak_fp4_flops == 0)
    fail("training.dtype", "fp4 (NVFP4) needs block-scaled tensor cores, which GPU " + s.cluster.gpu.name +
                               " lacks (no fp4 peak: peak_fp4_tflops)");
  if (t.dtype == Dtype::fp8 && t.fp8_recipe == Fp8Recipe::mxfp8 && s.cluster.gpu.peak_fp4_flops == 0)
    fail("training.fp8_recipe", "mxfp8 needs block-scaled tensor cores, which GPU " + s.cluster.gpu.name +
                                    " lacks (no fp4 peak: peak_fp4_tflops); delayed or tensorwise scaling runs there");
  // As Megatron-LM checks them.
  if (t.recomputes("mla_up_proj") && !m.has_latent_attention())
    fail("training.recompute_modules", "mla_up_proj needs latent attention (model.kv_lora_rank)");
  for (const std::string module : {"moe_act", "layernorm"})
    if (t.recomputes(module) && t.dtype == Dtype::fp8 && t.fp8_recipe == Fp8Recipe::delayed)
      fail("training.recompute_modules", module + " is not recomputed under fp8 delayed scaling, as in Megatron-LM");
}

// Divisibility rules of Megatron-LM, then the size limits
// (sim/scenario/scenario_limits.hpp).
void check_consistency(Scenario& s, const std::string& file) {
  const RuleBroken fail{file};
  check_tensor_split(s.model, s.parallel, fail);
  resolve_pipeline_layout(s.model.num_layers, s.parallel, file);
  check_data_parallel(s, fail);
  check_context_parallel(s, fail);
  check_experts(s, fail);
  check_batch_and_precision(s, fail);
  check_limits(s, file);
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& original, const std::string& source, const std::string& base_dir,
                        const std::vector<std::string>& overrides) {
  nlohmann::json document = original;
  if (!document.is_object()) throw InputError(source, "", "a scenario must be a JSON object");
  Scenario s;

  // A model given as a path to a Hugging Face config.json is read leniently
  // (such files carry many fields simtrain does not need).
  std::string model_file = source;
  bool model_is_file = false;
  if (document.contains("model") && document["model"].is_string()) {
    std::filesystem::path path(document["model"].get<std::string>());
    if (path.is_relative()) path = std::filesystem::path(base_dir) / path;
    model_file = path.string();
    std::error_code error;  // the throwing overload fails on names such as an over-long path
    if (!std::filesystem::exists(path, error)) throw InputError(source, "model", "no such file: " + model_file);
    document["model"] = read_json_file(model_file);
    model_is_file = true;
    s.files_read.push_back(model_file);
  }
  for (const std::string& assignment : overrides) apply_override(document, assignment, source, base_dir, s.files_read);

  JsonFields top(document, source, "");
  s.source = source;
  s.name = top.text("name").value_or(std::filesystem::path(source).stem().string());
  top.text("description");
  s.model = parse_model(top.raw("model"), model_file, model_is_file ? "" : "model.", !model_is_file);
  s.training = parse_training(top.raw("training"), source);
  const nlohmann::json no_parallelism = nlohmann::json::object();
  s.parallel = parse_parallelism(top.has("parallelism") ? top.raw("parallelism") : no_parallelism, source);

  JsonFields cluster(top.raw("cluster"), source, "cluster.");
  s.cluster.gpu = gpu_from_json(cluster.raw("gpu"), source, "cluster.gpu");
  s.cluster.num_gpus = cluster.required_integer("num_gpus");
  s.cluster.topology = topology_from_json(cluster.raw("topology"), source, "cluster.topology", base_dir);
  if (!s.cluster.topology.file.empty()) s.files_read.push_back(s.cluster.topology.file);
  if (const std::string& xml = s.cluster.topology.platform_file; !xml.empty() && xml != s.cluster.topology.file)
    s.files_read.push_back(xml);
  // A file the field names, relative to the scenario (an absolute path stays as it is).
  const auto user_file = [&](const std::string& field) -> std::optional<std::string> {
    const std::optional<std::string> name = cluster.text(field);
    if (!name) return std::nullopt;
    const std::filesystem::path path = std::filesystem::path(base_dir) / *name;
    if (!std::filesystem::is_regular_file(path)) cluster.fail(field, "no such file: " + path.string());
    s.files_read.push_back(path.string());
    return path.string();
  };
  if (const std::optional<std::string> profile = user_file("kernel_profile")) s.cluster.kernel_profile = *profile;
  if (const std::optional<std::string> profile = user_file("host_launch_profile"))
    s.cluster.host_launch_profile = read_host_launch_profile(*profile);
  if (const int slots = s.cluster.topology.max_gpus(); slots > 0 && s.cluster.num_gpus > slots)
    cluster.fail("num_gpus", "topology '" + s.cluster.topology.name + "' holds " + std::to_string(slots) +
                                 " GPUs, got " + std::to_string(s.cluster.num_gpus));
  check_consistency(s, source);
  s.cluster.heterogeneity = parse_heterogeneity(cluster, s.cluster.num_gpus);  // sized by the checked GPU count
  s.cluster.communication_backend =
      cluster.choice("communication_backend", {"nccl", "gloo"}).value_or("nccl") == "gloo" ? CommunicationBackend::gloo
                                                                                          : CommunicationBackend::nccl;
  s.cluster.gpu_vendors = parse_gpu_vendors(cluster, s.cluster.gpu, s.cluster.num_gpus);
  check_communication_backend(s);
  const std::optional<double> price = cluster.number("price_per_gpu_hour");
  s.cluster.default_price = !price && s.cluster.gpu.rental_usd_per_gpu_hour > 0;
  s.cluster.price_per_gpu_hour = price.value_or(s.cluster.gpu.rental_usd_per_gpu_hour);
  if (const std::optional<double> reserve_GiB = cluster.number("memory_reserve_GiB")) {
    s.cluster.memory_reserve_bytes = *reserve_GiB * 1024 * 1024 * 1024;
    if (s.cluster.memory_reserve_bytes >= s.cluster.gpu.memory_bytes)
      cluster.fail("memory_reserve_GiB", "must be below the GPU's memory (" +
                                             number_text(s.cluster.gpu.memory_bytes / (1024.0 * 1024 * 1024)) + " GiB)");
  }
  auto section = [&](const char* key) { return top.has(key) ? &top.raw(key) : nullptr; };
  s.run = parse_run_config(section("reliability"), section("checkpoint"), source);
  s.software = parse_host_settings(section("software"), source);
  cluster.reject_unknown();
  top.reject_unknown();
  s.document = document;
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    for (const EmbeddedFile& f : embedded_scenarios())
      if (f.name == path) return parse_scenario(nlohmann::json::parse(f.text), "scenarios/" + std::string(f.name) + ".json", ".", overrides);
  }
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  Scenario scenario = parse_scenario(read_json_file(path), path, base_dir.empty() ? "." : base_dir, overrides);
  scenario.files_read.insert(scenario.files_read.begin(), path);
  return scenario;
}

const char* default_scenario_name() { return "gpt3-175b-1024xh100"; }

}  // namespace simtrain
