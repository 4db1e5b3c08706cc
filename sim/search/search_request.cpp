#include "sim/search/search.hpp"

#include <algorithm>
#include <cmath>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"

namespace simtrain {

Objective objective_named(const std::string& name) {
  if (name == "cost") return Objective::cost;
  if (name == "tokens-per-dollar") return Objective::tokens_per_dollar;
  return Objective::time;
}

std::string to_string(Objective objective) {
  switch (objective) {
    case Objective::time: return "time";
    case Objective::cost: return "cost";
    case Objective::tokens_per_dollar: return "tokens-per-dollar";
  }
  return "?";
}

int64_t gpu_count_named(const std::string& text) {
  const nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  const bool whole = value.is_number_integer() ||
                     (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  if (!whole) throw InputError("search", "--gpus", "expected a whole number of GPUs, got '" + text + "'");
  const double gpus = value.get<double>();
  if (gpus < 1) throw InputError("search", "--gpus", "must be at least 1 GPU, got " + text);
  if (gpus > static_cast<double>(limits::max_gpus))
    throw InputError("search", "--gpus", "must be at most " + std::to_string(limits::max_gpus) +
                                             " GPUs (the largest cluster simtrain holds), got " + text);
  return static_cast<int64_t>(gpus);
}

std::string dimension_key(const std::string& written_key) {
  const size_t dot = written_key.find('.');
  if (dot == std::string::npos || written_key.find('.', dot + 1) != std::string::npos) return written_key;
  return written_key.substr(dot + 1);
}

bool is_hardware_key(const std::string& key) {
  return key == "gpu" || key == "topology" || key.starts_with("cluster.topology.");
}

bool sets_dimension(const std::string& set_key, const std::string& dimension_key) {
  return set_key == dimension_key ||
         (dimension_key == "virtual_stages" && set_key == "num_layers_per_virtual_pipeline_stage");
}

std::string grid_text(const SearchCounts& n) {
  std::vector<std::pair<long long, std::string>> most_first;
  for (const auto& [rule, points] : n.invalid_by_rule) most_first.push_back({-points, rule});
  std::sort(most_first.begin(), most_first.end());
  std::string rules;
  for (const auto& [minus_points, rule] : most_first)
    rules += (rules.empty() ? "" : "; ") + std::to_string(-minus_points) + " " + rule;
  return std::to_string(n.enumerated) + " grid points: " + std::to_string(n.duplicates) + " duplicates, " +
         std::to_string(n.invalid) + " invalid" + (rules.empty() ? "" : " (" + rules + ")") + ", " +
         std::to_string(n.out_of_memory) + " out of memory";
}

// Where the default grid varies context parallelism: sequences from 32K
// tokens (Llama 3 trained 8K without CP, its 128K stage with CP16), up to CP16.
constexpr int64_t kLongContextTokens = 32768;
constexpr int64_t kMostContextParallel = 16;

std::vector<Dimension> default_dimensions(const Scenario& s) {
  std::vector<nlohmann::json> tensor, pipeline;
  for (int t = 1; t <= std::min(8, s.cluster.topology.gpus_per_node); t *= 2) tensor.push_back(t);
  for (int64_t p = 1; p <= s.model.num_layers; p *= 2) pipeline.push_back(p);
  std::vector<Dimension> dimensions = {{"tensor_model_parallel_size", tensor},
                                       {"pipeline_model_parallel_size", pipeline},
                                       {"virtual_stages", {1, 2}},
                                       {"micro_batch_size", {1, 2, 4}},
                                       {"schedule", {"1f1b", "zb_h1"}},
                                       {"zero_stage", {0, 1, 2}},
                                       {"recompute_granularity", {"none", "selective", "full"}},
                                       {"sequence_parallel", {false, true}}};
  // Expert parallelism, for a model with experts: powers of two that divide
  // the experts (the scenario rules refuse those that do not divide DP x CP).
  if (s.model.has_experts()) {
    std::vector<nlohmann::json> expert;
    for (int64_t e = 1; e <= s.model.num_experts && s.model.num_experts % e == 0; e *= 2) expert.push_back(e);
    dimensions.push_back({"expert_model_parallel_size", expert});
  }
  if (searches_context_parallel(s)) {
    std::vector<nlohmann::json> context;
    for (int64_t c = 1; c <= kMostContextParallel && s.training.seq_length % (2 * c) == 0; c *= 2) context.push_back(c);
    dimensions.push_back({"context_parallel_size", context});
  }
  return dimensions;
}

bool searches_context_parallel(const Scenario& s) {
  return s.training.seq_length >= kLongContextTokens;
}

}  // namespace simtrain
