#include "sim/step/memory_model.hpp"

#include <map>

#include "sim/model/quantization.hpp"
#include "sim/program/pipeline_schedule.hpp"
#include "sim/step/memory_reserve.hpp"

namespace simtrain {

namespace {

struct StageShare {
  double parameters = 0;
  double expert_parameters = 0;  // of them, the routed experts' (sharded over the expert-data-parallel group)
  double activation_bytes = 0;
  double weight_grad_bytes = 0;
  double low_precision_weights = 0;  // linear weights cast to fp8 (fp4) for the linears' GEMMs
  double loss_transient_bytes = 0;   // held only while the loss runs forward or backward
};

StageShare stage_share(const Workload& w, int stage) {
  const StageUnits held = stage_units(w, stage);
  StageShare share;
  auto add = [&](const UnitWork& unit, double count) {
    share.parameters += count * unit.parameters;
    share.expert_parameters += count * unit.expert_parameters;
    share.activation_bytes += count * unit.activation_bytes;
    share.weight_grad_bytes += count * unit.weight_grad_activation_bytes;
    share.low_precision_weights += count * unit.low_precision_weights;
  };
  // Dense and MoE layers in a model mixing them; under block recompute, those kept.
  for (const auto& [work, layers] : w.layer_works_among(held.first_layer, held.layers)) add(*work, layers);
  if (held.embedding) add(w.embedding, 1);
  if (held.head) {
    add(w.head, 1);  // with the last stage's copy of tied word embeddings
    // Megatron's vocab-parallel cross entropy copies the bf16 logits to fp32
    // (the softmax it stores: the head's activations less its input) while
    // the bf16 ones are still referenced, and its fp32 gradient is cast back to
    // bf16 beside it (megatron/core/tensor_parallel/cross_entropy.py): half the
    // fp32 bytes again, forward and backward.
    share.loss_transient_bytes = (w.head.activation_bytes - w.head.weight_grad_activation_bytes) / 2;
  }
  return share;
}

// Bytes of `bytes_per_parameter` for a rank's parameters, sharded over the
// data-parallel group (with context parallelism, DP x CP: Megatron's dp_cp)
// where `sharded`; with expert parallelism, the routed experts' over their
// expert-data-parallel group.
double state_bytes(const Scenario& s, const StageShare& held, double bytes_per_parameter, bool sharded) {
  if (!sharded) return held.parameters * bytes_per_parameter;
  const double experts = s.parallel.expert > 1 ? held.expert_parameters : 0;
  return (held.parameters - experts) * bytes_per_parameter / static_cast<double>(s.parallel.data_context()) +
         experts * bytes_per_parameter / static_cast<double>(s.parallel.expert_data());
}

// In fp8 (fp4) training Transformer Engine keeps each linear's weight cast
// from a step's first micro-batch to its last (Megatron-Core's TE linears pass
// is_first_microbatch; TE's Linear caches the workspace "weight"): the
// row-wise copy the forward GEMM reads and the column-wise one the
// input-gradient GEMM reads. Under ZeRO-3 (Megatron FSDP) weights are
// gathered per use and only the column-wise copies are kept
// (keep_fp8_transpose_cache, as NeMo's fp8 FSDP recipes set it). With fp8
// parameters (fp8_param_gather) the weight is itself the row-wise copy, held
// in place of bf16 at a byte, and only the column-wise one is added.
double weight_cast_cache_bytes(const Scenario& s, const Workload& w, const StageShare& held) {
  const LinearQuantization quantization = linear_quantization(s.training);
  if (!quantization.quantized()) return 0;
  const double copy_bytes = held.low_precision_weights * quantization.copy_bytes_per_element();
  if (s.parallel.zero_stage >= 3) return copy_bytes;
  if (s.training.fp8_param_gather) return 2 * copy_bytes - held.low_precision_weights * w.weight_bytes_per_parameter;
  return 2 * copy_bytes;
}

// Model states, sharded as ZeRO shards them.
void add_model_states(MemoryBreakdown& m, const Scenario& s, const Workload& w, const StageShare& held) {
  const int zero = s.parallel.zero_stage;
  m.weights_bytes = state_bytes(s, held, w.weight_bytes_per_parameter, zero >= 3) + weight_cast_cache_bytes(s, w, held);
  m.gradients_bytes = state_bytes(s, held, w.grad_bytes_per_parameter, zero >= 2);
  m.optimizer_bytes = state_bytes(s, held, w.optimizer_state_bytes_per_parameter, zero >= 1);
}

// A forward, backward or weight-gradient pass of one micro-batch through one model stage.
struct StagePass {
  TaskKind kind;
  int stage;
  int microbatch;
};

// Activations: a forward stores them; the backward (input grads) frees all
// but what the weight-gradient pass needs; that pass frees the rest. The
// loss's transients count while its forward and backward run. On top of the
// most held, context parallelism's K/V exchange buffers of the layer whose
// attention runs.
void add_activations(MemoryBreakdown& m, const Scenario& s, const Workload& w, const std::vector<StagePass>& passes) {
  const PipelineStages stages = pipeline_stages(s);
  std::map<std::pair<int, int>, double> held;  // (stage, micro-batch) -> bytes
  double current = 0;
  int in_flight = 0;
  for (const StagePass& t : passes) {
    const StageShare share = stage_share(w, stages.layers_of(t.stage));
    const auto key = std::make_pair(t.stage, t.microbatch);
    auto release_to = [&](double keep) {
      auto it = held.find(key);
      if (it == held.end() || it->second <= keep) return;
      current -= it->second - keep;
      it->second = keep;
      if (keep == 0) held.erase(it), --in_flight;
    };
    auto note_peak = [&] {
      const double during = current + share.loss_transient_bytes;
      if (during > m.activations_bytes) m.activations_bytes = during, m.peak_in_flight_microbatches = in_flight;
    };
    if (t.kind == TaskKind::F) {
      // A forward lowered in one task per weight bucket (overlap_param_gather's
      // first forward of a chunk) is one pass: its first task stores the stage's activations.
      if (!held.emplace(key, share.activation_bytes).second) continue;
      current += share.activation_bytes;
      ++in_flight;
      note_peak();
    } else if (t.kind == TaskKind::B) {
      note_peak();
      release_to(splits_backward(s.parallel.schedule) ? share.weight_grad_bytes : 0);
    } else {
      release_to(0);
    }
  }
  m.activations_bytes += w.cp_exchange_buffer_bytes;
}

}  // namespace

namespace {

// The parameters of a pipeline rank's chunks.
StageShare held_parameters(const Scenario& s, const Workload& w, int pp) {
  const PipelineStages stages = pipeline_stages(s);
  StageShare held;
  for (int chunk = 0; chunk < stages.chunks_per_rank(); ++chunk) {
    const StageShare share = stage_share(w, stages.layers_of(stages.of(chunk, pp)));
    held.parameters += share.parameters;
    held.expert_parameters += share.expert_parameters;
    held.low_precision_weights += share.low_precision_weights;
  }
  return held;
}

}  // namespace

double parameters_on_rank(const Scenario& s, const Workload& w, const Program& program, int rank) {
  return held_parameters(s, w, program.coords[rank].pp).parameters;
}

MemoryBreakdown memory_for_rank(const Scenario& s, const Workload& w, const Program& program, int rank) {
  MemoryBreakdown m;
  add_model_states(m, s, w, held_parameters(s, w, program.coords[rank].pp));
  std::vector<StagePass> passes;
  for (int id : program.rank_tasks(rank)) {
    const Task& t = program.tasks[id];
    if (t.kind == TaskKind::F || t.kind == TaskKind::B || t.kind == TaskKind::W)
      passes.push_back({t.kind, t.stage, t.microbatch});
  }
  add_activations(m, s, w, passes);
  m.reserve_bytes = memory_reserve_bytes(s);
  return m;
}

std::vector<MemoryBreakdown> memory_per_pipeline_rank(const Scenario& s, const Workload& w) {
  const int p = static_cast<int>(s.parallel.pipeline);
  const PipelineStages stages = pipeline_stages(s);
  const auto schedule = pipeline_schedule(s);
  std::vector<MemoryBreakdown> memory(p);
  for (int pp = 0; pp < p; ++pp) {
    add_model_states(memory[pp], s, w, held_parameters(s, w, pp));
    std::vector<StagePass> passes;
    for (const PipelineAction& a : schedule[pp]) passes.push_back({a.kind, stages.of(a.chunk, pp), a.microbatch});
    add_activations(memory[pp], s, w, passes);
    memory[pp].reserve_bytes = memory_reserve_bytes(s);
  }
  return memory;
}

constexpr double rng_state_bytes = 16 * 1024;  // CUDA and CPU generator states of one rank

// Unsharded states are written by one replica: the first data-parallel rank,
// and for the routed experts the first rank of each expert-parallel group's
// members (the first EP data-parallel ranks).
std::vector<double> checkpoint_bytes_per_rank(const Scenario& s, const Workload& w, const Program& program) {
  const int zero = s.parallel.zero_stage;
  std::vector<double> bytes;
  for (int rank = 0; rank < program.world_size; ++rank) {
    const StageShare held = held_parameters(s, w, program.coords[rank].pp);
    const int dp = program.coords[rank].dp;
    const double experts = s.parallel.expert > 1 ? held.expert_parameters : 0;
    const auto replica_bytes = [&](double bytes_per_parameter) {
      return (dp == 0 ? (held.parameters - experts) * bytes_per_parameter : 0) +
             (dp < s.parallel.expert ? experts * bytes_per_parameter : 0);
    };
    const double weights = zero >= 3 ? state_bytes(s, held, w.weight_bytes_per_parameter, true)
                                     : replica_bytes(w.weight_bytes_per_parameter);
    const double optimizer = zero >= 1 ? state_bytes(s, held, w.optimizer_state_bytes_per_parameter, true)
                                       : replica_bytes(w.optimizer_state_bytes_per_parameter);
    bytes.push_back(weights + optimizer + rng_state_bytes);
  }
  return bytes;
}

}  // namespace simtrain
