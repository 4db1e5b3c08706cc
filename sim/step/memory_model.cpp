#include "sim/step/memory_model.hpp"

#include <map>

#include "sim/program/pipeline_schedule.hpp"

namespace simtrain {

namespace {

struct StageShare {
  double parameters = 0;
  double activation_bytes = 0;
  double weight_grad_bytes = 0;
};

StageShare stage_share(const Workload& w, const Scenario& s, int stage) {
  const StageUnits held = stage_units(w, stage);
  const double layers = held.layers;
  StageShare share{layers * w.layer.parameters, layers * w.layer.activation_bytes,
                   layers * w.layer.weight_grad_activation_bytes};
  auto add = [&](const UnitWork& unit) {
    share.parameters += unit.parameters;
    share.activation_bytes += unit.activation_bytes;
    share.weight_grad_bytes += unit.weight_grad_activation_bytes;
  };
  if (held.embedding) add(w.embedding);
  if (held.head) {
    add(w.head);
    // The last stage, unless it is the first too, keeps its own copy of tied word embeddings for the logits.
    if (s.model.tie_word_embeddings && !held.embedding) share.parameters += w.embedding.parameters;
  }
  return share;
}

// Model states, sharded as ZeRO shards them.
void add_model_states(MemoryBreakdown& m, const Scenario& s, const Workload& w, double parameters) {
  const double d = static_cast<double>(s.parallel.data);
  const int zero = s.parallel.zero_stage;
  m.weights_bytes = parameters * w.weight_bytes_per_parameter / (zero >= 3 ? d : 1);
  m.gradients_bytes = parameters * w.grad_bytes_per_parameter / (zero >= 2 ? d : 1);
  m.optimizer_bytes = parameters * w.optimizer_state_bytes_per_parameter / (zero >= 1 ? d : 1);
}

// A forward, backward or weight-gradient pass of one micro-batch through one model stage.
struct StagePass {
  TaskKind kind;
  int stage;
  int microbatch;
};

// Activations: a forward stores them; the backward (input grads) frees all
// but what the weight-gradient pass needs; that pass frees the rest.
void add_activations(MemoryBreakdown& m, const Scenario& s, const Workload& w, const std::vector<StagePass>& passes) {
  std::map<std::pair<int, int>, double> held;  // (stage, micro-batch) -> bytes
  double current = 0;
  int in_flight = 0;
  for (const StagePass& t : passes) {
    const StageShare share = stage_share(w, s, t.stage);
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
  double parameters = 0;
  for (int chunk = 0; chunk < program.virtual_stages; ++chunk)
    parameters += stage_share(w, s, chunk * program.pipeline_size + program.coords[rank].pp).parameters;
  return parameters;
}

MemoryBreakdown memory_for_rank(const Scenario& s, const Workload& w, const Program& program, int rank) {
  MemoryBreakdown m;
  const double parameters = parameters_on_rank(s, w, program, rank);
  add_model_states(m, s, w, parameters);
  std::vector<StagePass> passes;
  for (int id : program.rank_tasks(rank)) {
    const Task& t = program.tasks[id];
    if (t.kind == TaskKind::F || t.kind == TaskKind::B || t.kind == TaskKind::W)
      passes.push_back({t.kind, t.stage, t.microbatch});
  }
  add_activations(m, s, w, passes);
  return m;
}

std::vector<MemoryBreakdown> memory_per_pipeline_rank(const Scenario& s, const Workload& w) {
  const int p = static_cast<int>(s.parallel.pipeline), v = static_cast<int>(s.virtual_stages());
  const auto schedule = pipeline_schedule(s);
  std::vector<MemoryBreakdown> memory(p);
  for (int pp = 0; pp < p; ++pp) {
    double parameters = 0;
    for (int chunk = 0; chunk < v; ++chunk) parameters += stage_share(w, s, chunk * p + pp).parameters;
    add_model_states(memory[pp], s, w, parameters);
    std::vector<StagePass> passes;
    for (const PipelineAction& a : schedule[pp]) passes.push_back({a.kind, a.chunk * p + pp, a.microbatch});
    add_activations(memory[pp], s, w, passes);
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
    const double weights_bytes = w.weight_bytes_per_parameter * parameters;
    const double optimizer_bytes = w.optimizer_state_bytes_per_parameter * parameters;
    const double weights = zero >= 3 ? weights_bytes / d : (first_replica ? weights_bytes : 0);
    const double optimizer = zero >= 1 ? optimizer_bytes / d : (first_replica ? optimizer_bytes : 0);
    bytes.push_back(weights + optimizer + rng_state_bytes);
  }
  return bytes;
}

}  // namespace simtrain
