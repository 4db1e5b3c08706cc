#include "memory_model.hpp"

#include <map>

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
  const double layers = static_cast<double>(s.model.num_layers) / stages;
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

}  // namespace

MemoryBreakdown memory_for_rank(const Scenario& s, const Workload& w, const Program& program, int rank) {
  const int stages = program.pipeline_size * program.virtual_stages;
  const double d = static_cast<double>(s.parallel.data);
  const int zero = s.parallel.zero_stage;
  MemoryBreakdown m;
  double parameters = 0;
  for (int chunk = 0; chunk < program.virtual_stages; ++chunk)
    parameters += stage_share(w, s, chunk * program.pipeline_size + program.coords[rank].pp, stages).parameters;
  m.weights_bytes = parameters * weight_bytes / (zero >= 3 ? d : 1);
  m.gradients_bytes = parameters * gradient_bytes / (zero >= 2 ? d : 1);
  m.optimizer_bytes = parameters * optimizer_bytes / (zero >= 1 ? d : 1);

  // Activations: a forward stores them; the backward (input grads) frees all
  // but what the weight-gradient pass needs; that pass frees the rest.
  std::map<std::pair<int, int>, double> held;  // (stage, micro-batch) -> bytes
  double current = 0;
  int in_flight = 0;
  for (int id : program.rank_tasks[rank]) {
    const Task& t = program.tasks[id];
    if (t.kind != TaskKind::F && t.kind != TaskKind::B && t.kind != TaskKind::W) continue;
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
  return m;
}

}  // namespace simtrain
