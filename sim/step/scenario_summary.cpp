#include "sim/step/scenario_summary.hpp"

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

std::string on_off(bool on) { return on ? "on" : "off"; }

std::string parameter_count(double parameters) {
  if (parameters >= 1e9) return format("%.1f B", parameters / 1e9);
  if (parameters >= 1e6) return format("%.1f M", parameters / 1e6);
  return with_commas(parameters);
}

std::string parallel_layout(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  std::string layout = "TP " + std::to_string(p.tensor) + " x PP " + std::to_string(p.pipeline) + " x DP " +
                       std::to_string(p.data);
  // Without CP the line stays as it was.
  if (p.context > 1) {
    layout += " x CP " + std::to_string(p.context) + " (" + to_string(p.cp_comm_type);
    if (!p.hierarchical_context.empty())  // a2a+p2p: "(a2a+p2p 2 x 4)"
      layout.append(" ").append(std::to_string(p.hierarchical_context[0])).append(" x ").append(
          std::to_string(p.hierarchical_context[1]));
    layout += ")";
  }
  if (s.virtual_stages() > 1) layout += " x " + std::to_string(s.virtual_stages()) + " virtual stages";
  return layout;
}

// ", block: the first 5 layers of each model stage" under block recompute.
std::string block_recompute(const TrainingConfig& t) {
  if (t.recompute_block_layers == 0) return "";
  return ", block: the first " + std::to_string(t.recompute_block_layers) + " layer" +
         (t.recompute_block_layers > 1 ? "s" : "") + " of each model stage";
}

std::string aligned_line(const std::string& label, const std::string& value) {
  std::string line;
  add_line(line, label, value);
  line.pop_back();  // add_line ends it with a newline
  return line;
}

}  // namespace

std::vector<std::string> platform_note_lines(const Topology& topology) {
  if (topology.kind != TopologyKind::simgrid_platform) return {};
  std::vector<std::string> lines = {aligned_line("NOTE", "SimGrid platform " + topology.platform_file + ":")};
  for (const std::string& note : simgrid_platform_notes()) lines.push_back(aligned_line("", note));
  return lines;
}

nlohmann::ordered_json platform_note_json(const Topology& topology) {
  if (topology.kind != TopologyKind::simgrid_platform) return nullptr;
  return {{"file", topology.platform_file}, {"notes", simgrid_platform_notes()}};
}

std::vector<std::string> scenario_summary_lines(const Scenario& s, const Workload& w) {
  const ModelConfig& m = s.model;
  const ParallelConfig& p = s.parallel;
  const TrainingConfig& t = s.training;
  // Models with experts say how they are routed and split; a dense model's lines stay as they were.
  const std::string experts =
      m.has_experts()
          ? ", " + std::to_string(m.num_experts) + " experts (top-" + std::to_string(m.experts_per_token) + ")"
          : "";
  // The flex dispatcher's backend where it is not the default (DeepEP).
  const std::string hybridep =
      p.moe_dispatcher == MoeDispatcher::flex && p.moe_flex_backend == FlexBackend::hybridep ? " hybridep" : "";
  const std::string expert_parallel =
      m.has_experts() ? ", EP " + std::to_string(p.expert) + " (" + to_string(p.moe_dispatcher) + hybridep +
                            (p.overlap_ep_comm ? ", overlapped in 1F1B" : "") + ")"
                      : "";
  std::vector<std::string> lines = {
      aligned_line("model", m.name + ": " + std::to_string(m.num_layers) + " layers, hidden size " +
                                std::to_string(m.hidden_size) + experts + ", " +
                                parameter_count(w.total_parameters) + " parameters"),
      aligned_line("cluster", std::to_string(s.cluster.num_gpus) + " x " + s.cluster.gpu.name + ", topology " +
                                  s.cluster.topology.name),
      aligned_line("parallelism", parallel_layout(s) + expert_parallel + ", schedule " + to_string(p.schedule) + ", ZeRO stage " +
                                      std::to_string(p.zero_stage) + ", sequence parallel " +
                                      on_off(p.sequence_parallel)),
      aligned_line("batch", "micro-batch size " + std::to_string(t.micro_batch_size) + ", " +
                                std::to_string(s.micro_batches()) + " micro-batches per pipeline (global batch " +
                                std::to_string(t.global_batch_size) + ", sequence length " +
                                std::to_string(t.seq_length) + ")"),
      aligned_line("training", to_string(t.dtype) +
                                   (t.dtype == Dtype::fp8 ? " (" + to_string(t.fp8_recipe) + " scaling)" : "") +
                                   ", recompute " + to_string(t.recompute) + block_recompute(t)),
  };
  // A platform file's limits, said where the cluster is; a JSON topology's lines stay as they were.
  const std::vector<std::string> notes = platform_note_lines(s.cluster.topology);
  lines.insert(lines.begin() + 2, notes.begin(), notes.end());  // after the cluster line
  return lines;
}

nlohmann::ordered_json scenario_summary_json(const Scenario& s, const Workload& w) {
  const ModelConfig& m = s.model;
  const ParallelConfig& p = s.parallel;
  const TrainingConfig& t = s.training;
  nlohmann::ordered_json summary;
  summary["name"] = s.name;
  summary["model"] = {{"name", m.name},
                      {"num_hidden_layers", m.num_layers},
                      {"hidden_size", m.hidden_size},
                      {"parameters", w.total_parameters}};
  summary["cluster"] = {{"num_gpus", s.cluster.num_gpus},
                        {"gpu", s.cluster.gpu.name},
                        {"topology", s.cluster.topology.name}};
  summary["parallelism"] = {{"tensor_model_parallel_size", p.tensor},
                            {"pipeline_model_parallel_size", p.pipeline},
                            {"data_parallel_size", p.data},
                            {"virtual_stages", s.virtual_stages()},
                            {"schedule", to_string(p.schedule)},
                            {"zero_stage", p.zero_stage},
                            {"sequence_parallel", p.sequence_parallel}};
  summary["training"] = {{"micro_batch_size", t.micro_batch_size},
                         {"micro_batches", s.micro_batches()},
                         {"global_batch_size", t.global_batch_size},
                         {"seq_length", t.seq_length},
                         {"dtype", to_string(t.dtype)},
                         {"recompute_granularity", to_string(t.recompute)}};
  if (t.dtype == Dtype::fp8) summary["training"]["fp8_recipe"] = to_string(t.fp8_recipe);
  if (m.has_experts()) {
    summary["model"]["num_experts"] = m.num_experts;
    summary["model"]["num_experts_per_tok"] = m.experts_per_token;
    summary["parallelism"]["expert_model_parallel_size"] = p.expert;
    summary["parallelism"]["moe_token_dispatcher_type"] = to_string(p.moe_dispatcher);
    summary["parallelism"]["overlap_moe_expert_parallel_comm"] = p.overlap_ep_comm;
    summary["training"]["moe_load_imbalance"] = t.moe_load_imbalance;
    summary["training"]["capacity_factor"] = t.capacity_factor > 0 ? nlohmann::ordered_json(t.capacity_factor) : nullptr;
  }
  if (const nlohmann::ordered_json notes = platform_note_json(s.cluster.topology); !notes.is_null())
    summary["cluster"]["simgrid_platform"] = notes;
  if (p.context > 1) {
    summary["parallelism"]["context_parallel_size"] = p.context;
    summary["parallelism"]["cp_comm_type"] = to_string(p.cp_comm_type);
    if (!p.hierarchical_context.empty())
      summary["parallelism"]["hierarchical_context_parallel_sizes"] = p.hierarchical_context;
  }
  return summary;
}

}  // namespace simtrain
