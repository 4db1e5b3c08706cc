#include "sim/step/memory_model.hpp"

#include <map>

#include "sim/program/pipeline_schedule.hpp"

namespace simtrain {

namespace {

// Bytes per parameter of mixed-precision Adam (ZeRO paper, section 3.1).
constexpr double weight_bytes = 2;      // bf16 weights
constexpr double gradient_bytes = 4;    // fp32 main gradients (Megatron with bf16)
constexpr double optimizer_bytes = 12;  // fp32 master weights, momentum, variance

struct StageShare {
  double parameters = 0;
  double activation_bytes = 0;
  double weight_grad_bytes = 0;
};

StageShare stage_share(const Workload& w, const Scenario& s, int stage, int stages) {
  const double layers = w.stage_layers[stage];
  StageShare share{layers * w.layer.parameters, layers * w.layer.activation_bytes,
                   layers * w.layer.weight_grad_activation_bytes};
  auto add = [&](const UnitWork& unit) {
    share.parameters += unit.parameters;
    share.activation_bytes += unit.activation_bytes;
    share.weight_grad_bytes += unit.weight_grad_activation_bytes;
  };
  if (stage == 0) add(w.embedding);
  if (stage == stages - 1) {
    add(w.head);
    // The last stage keeps its own copy of tied word embeddings for the logits.
    if (s.model.tie_word_embeddings && stages > 1) share.parameters += w.embedding.parameters;
  }
  return share;
}

// Model states, sharded as ZeRO shards them.
void add_model_states(MemoryBreakdown& m, const Scenario& s, double parameters) {
  const double d = static_cast<double>(s.parallel.data);
  const int zero = s.parallel.zero_stage;
  m.weights_bytes = parameters * weight_bytes / (zero >= 3 ? d : 1);
  m.gradients_bytes = parameters * gradient_bytes / (zero >= 2 ? d : 1);
  m.optimizer_bytes = parameters * optimizer_bytes / (zero >= 1 ? d : 1);
}

// A forward, backward or weight-gradient pass of one micro-batch through one model stage.
struct StagePass {
  TaskKind kind;
  int stage;
  int microbatch;
};

// Activations: a forward stores them; the backward (input grads) frees all
// but what the weight-gradient pass needs; that pass frees the rest.
void add_activations(MemoryBreakdown& m, const Scenario& s, const Workload& w, int stages,
                     const std::vector<StagePass>& passes) {
  std::map<std::pair<int, int>, double> held;  // (stage, micro-batch) -> bytes
  double current = 0;
  int in_flight = 0;
  for (const StagePass& t : passes) {
    const StageShare share = stage_share(w, s, t.stage, stages);
    const auto key = std::make_pair(t.stage, t.microbatch);
    auto release_to = [&](double keep) {
      auto it = held.find(key);
      if (it == held.end() || it->second <= keep) return;
      current -= it->second - keep;
      it->second = keep;
      if (keep == 0) held.erase(it), --in_flight;
    };
    if (t.kind == TaskKind::F) {
      held[key] = share.activation_bytes;
      current += share.activation_bytes;
      ++in_flight;
      if (current > m.activations_bytes) m.activations_bytes = current, m.peak_in_flight_microbatches = in_flight;
    } else if (t.kind == TaskKind::B) {
      release_to(s.parallel.schedule == ScheduleKind::zb_h1 ? share.weight_grad_bytes : 0);
    } else {
      release_to(0);
    }
  }
}

}  // namespace

double parameters_on_rank(const Scenario& s, const Workload& w, const Program& program, int rank) {
  const int stages = program.pipeline_size * program.virtual_stages;
  double parameters = 0;
  for (int chunk = 0; chunk < program.virtual_stages; ++chunk)
    parameters += stage_share(w, s, chunk * program.pipeline_size + program.coords[rank].pp, stages).parameters;
  return parameters;
}

MemoryBreakdown memory_for_rank(const Scenario& s, const Workload& w, const Program& program, int rank) {
  const int stages = program.pipeline_size * program.virtual_stages;
  MemoryBreakdown m;
  const double parameters = parameters_on_rank(s, w, program, rank);
  add_model_states(m, s, parameters);
  std::vector<StagePass> passes;
  for (int id : program.rank_tasks[rank]) {
    const Task& t = program.tasks[id];
    if (t.kind == TaskKind::F || t.kind == TaskKind::B || t.kind == TaskKind::W)
      passes.push_back({t.kind, t.stage, t.microbatch});
  }
  add_activations(m, s, w, stages, passes);
  return m;
}

std::vector<MemoryBreakdown> memory_per_pipeline_rank(const Scenario& s, const Workload& w) {
  const int p = static_cast<int>(s.parallel.pipeline), v = static_cast<int>(s.virtual_stages());
  const auto schedule = pipeline_schedule(s.parallel.schedule, p, static_cast<int>(s.micro_batches()), v);
  std::vector<MemoryBreakdown> memory(p);
  for (int pp = 0; pp < p; ++pp) {
    double parameters = 0;
    for (int chunk = 0; chunk < v; ++chunk) parameters += stage_share(w, s, chunk * p + pp, p * v).parameters;
    add_model_states(memory[pp], s, parameters);
    std::vector<StagePass> passes;
    for (const PipelineAction& a : schedule[pp]) passes.push_back({a.kind, a.chunk * p + pp, a.microbatch});
    add_activations(memory[pp], s, w, p * v, passes);
  }
  return memory;
}

constexpr double rng_state_bytes = 16 * 1024;  // CUDA and CPU generator states of one rank

std::vector<double> checkpoint_bytes_per_rank(const Scenario& s, const Workload& w, const Program& program) {
  const double d = static_cast<double>(s.parallel.data);
  const int zero = s.parallel.zero_stage;
  std::vector<double> bytes;
  for (int rank = 0; rank < program.world_size; ++rank) {
    const double parameters = parameters_on_rank(s, w, program, rank);
    const bool first_replica = program.coords[rank].dp == 0;
    const double weights = zero >= 3 ? 2 * parameters / d : (first_replica ? 2 * parameters : 0);
    const double optimizer = zero >= 1 ? 12 * parameters / d : (first_replica ? 12 * parameters : 0);
    bytes.push_back(weights + optimizer + rng_state_bytes);
  }
  return bytes;
}

}  // namespace simtrain
