#include "sim/scenario/scenario_limits.hpp"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/text_format.hpp"
#include "sim/scenario/rank_layout.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// A count in full digits (1099511627776, not 1.09951e+12).
std::string describe(double value) { return format("%.0f", value); }

// The layers of the busiest pipeline rank, over all its chunks (an even
// share where "auto" has not balanced them yet).
double most_layers_on_a_rank(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  if (p.stage_layers.empty()) return static_cast<double>(s.model.num_layers) / static_cast<double>(p.pipeline);
  std::vector<double> per_rank(p.pipeline, 0);
  for (size_t stage = 0; stage < p.stage_layers.size(); ++stage)
    per_rank[stage % per_rank.size()] += static_cast<double>(p.stage_layers[stage]);
  return *std::max_element(per_rank.begin(), per_rank.end());
}

}  // namespace

double estimated_tasks(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  const double v = static_cast<double>(s.virtual_stages());
  const double actions = static_cast<double>(s.micro_batches()) * v * (splits_backward(p.schedule) ? 3 : 2);
  // A pass is followed by its TP collectives, one task per size: the layers'
  // (two with sequence parallelism) and the cross-entropy's.
  // An MoE layer's exchanges add sizes: expert parallelism's (the allgather
  // dispatcher's two, the flex one's across nodes two, each twice with
  // HybridEP's probabilities), and over TP its routed rows'.
  const bool two_exchanges = p.moe_dispatcher == MoeDispatcher::allgather ||
                             (p.moe_dispatcher == MoeDispatcher::flex &&
                              expert_group_nodes(p, s.cluster.topology.gpus_per_node) > 1);
  const bool with_probabilities =
      p.moe_dispatcher == MoeDispatcher::flex && p.moe_flex_backend == FlexBackend::hybridep;
  const double ep_sizes = p.expert > 1 ? (two_exchanges ? 2 : 1) * (with_probabilities ? 2 : 1) : 0;
  const double moe_tp_sizes = s.model.has_experts() && p.tensor > 1 ? (p.sequence_parallel ? 2 : 1) : 0;
  // Context parallelism's K/V exchange: one size forward, two backward (K/V, dK/dV).
  const double cp_sizes = p.context > 1 ? 2 : 0;
  const double tp_sizes = (p.tensor > 1 ? (p.sequence_parallel ? 3 : 2) : 0) + ep_sizes + moe_tp_sizes + cp_sizes;
  const double passes = s.training.recompute == Recompute::none ? 1 : 2;
  const double tasks_per_action = passes * (1 + tp_sizes) + (p.pipeline > 1 ? 2 : 0) +  // send, receive
                                  (p.zero_stage == 3 && p.data_context() > 1 ? 2 : 0) *           // gather, reduce-scatter
                                      (p.expert > 1 ? 2 : 1);  // of the dense weights and of the experts
  // At most one gradient bucket per unit of a chunk (its layers, embedding,
  // head), each a compute task with its TP collectives, a reduction and a gather.
  // With expert parallelism a bucket's experts are reduced on their own.
  const double bucket_tasks = (most_layers_on_a_rank(s) + 2 * v) * (3 + tp_sizes + (p.expert > 1 ? 2 : 0));
  return static_cast<double>(p.world_size()) * (actions * tasks_per_action + bucket_tasks + 2);  // + optimizer, embedding sync
}

double estimated_program_bytes(const Scenario& s) { return estimated_tasks(s) * limits::program_bytes_per_task; }

void check_limits(const Scenario& s, const std::string& file) {
  auto fail = [&](const std::string& field, const std::string& reason) { throw InputError(file, field, reason); };
  auto at_most = [&](const std::string& field, int64_t value, int64_t limit) {
    if (value > limit)
      fail(field, "must be at most " + number_text(double(limit)) + ", got " + std::to_string(value));
  };
  at_most("cluster.num_gpus", s.cluster.num_gpus, limits::max_gpus);
  at_most("model.num_hidden_layers", s.model.num_layers, limits::max_layers);

  // The widest activation a token has, and its name.
  const ModelConfig& m = s.model;
  const double hidden = static_cast<double>(m.hidden_size);
  const std::pair<double, const char*> widths[] = {
      {(static_cast<double>(m.num_attention_heads) + 2.0 * static_cast<double>(m.num_key_value_heads)) *
           static_cast<double>(m.head_dim),
       "query/key/value width"},
      {(m.gated_mlp ? 2.0 : 1.0) * static_cast<double>(m.intermediate_size),
       m.gated_mlp ? "2 x intermediate_size" : "intermediate_size"},
      {static_cast<double>(m.vocab_size), "vocab_size"}};
  const auto [width, width_name] = *std::max_element(std::begin(widths), std::end(widths),
                                                     [](const auto& a, const auto& b) { return a.first < b.first; });
  const double seq = static_cast<double>(s.training.seq_length);
  const double tokens = static_cast<double>(s.training.micro_batch_size) * seq;
  const struct {
    const char* field;
    std::string tensor;
    double elements;
  } tensors[] = {
      {"model.hidden_size", "a weight (hidden_size x " + std::string(width_name) + ")", hidden * width},
      {"model.max_position_embeddings", "the position table (max_position_embeddings x hidden_size)",
       static_cast<double>(m.max_position_embeddings) * hidden},
      {"training.seq_length", "an activation (micro_batch_size x seq_length x " + std::string(width_name) + ")",
       tokens * width},
      {"training.seq_length", "the attention scores (micro_batch_size x heads x seq_length^2)",
       s.training.flash_attention ? 0 : tokens * static_cast<double>(m.num_attention_heads) * seq},
  };
  for (const auto& t : tensors)
    if (t.elements > limits::max_tensor_elements)
      fail(t.field, "too large: " + t.tensor + " would have " + describe(t.elements) +
                        " elements, more than the limit of " + describe(limits::max_tensor_elements));

  const double program_bytes = estimated_program_bytes(s);
  if (program_bytes > limits::max_program_bytes)
    fail("", "too large to simulate (its Program would take about " + format("%.1f GiB", program_bytes / GiB) +
                 ": about " + with_commas(estimated_tasks(s)) + " tasks, " + std::to_string(s.parallel.world_size()) +
                 " GPUs x " + std::to_string(s.micro_batches()) + " micro-batches), more than the limit of " +
                 format("%.0f GiB", limits::max_program_bytes / GiB) + "; simulate fewer GPUs or micro-batches");
}

}  // namespace simtrain
