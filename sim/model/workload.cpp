#include "sim/model/workload.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "sim/model/layers/context_parallel_ops.hpp"
#include "sim/model/layers/embedding_ops.hpp"
#include "sim/model/layers/op_builder.hpp"
#include "sim/model/layers/transformer_layer.hpp"
#include "sim/model/parameter_count.hpp"
#include "sim/model/partition.hpp"

namespace simtrain {

std::string to_string(OpClass op_class) {
  switch (op_class) {
    case OpClass::gemm: return "gemm";
    case OpClass::attention: return "attention";
    case OpClass::memory_bound: return "memory_bound";
    case OpClass::optimizer: return "optimizer";
  }
  return "unknown";
}

Dtype op_dtype(const Op& op, Dtype training) {
  const bool low_precision = training == Dtype::fp8 || training == Dtype::fp4;
  if (op.low_precision_operands) return training;
  return low_precision ? Dtype::bf16 : training;
}

double total_flops(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) total += op.flops;
  return total;
}

double total_bytes(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) total += op.bytes;
  return total;
}

double Pass::flops() const { return total_flops(ops); }
double Pass::bytes() const { return total_bytes(ops); }

namespace {

using layers::Shard;

double training_flops(const UnitWork& work) {
  return work.forward.flops() + work.backward_input.flops() + work.backward_weight.flops();
}

// The shard of a dense layer in a model mixing dense and MoE layers: an MLP
// intermediate_size wide, as in a model without experts.
Shard dense_shard(Shard rank) {
  rank.local_experts = 0;
  return rank;
}

// The shard of a sliding-window layer: its attention's window.
Shard sliding_shard(Shard rank) {
  rank.window = rank.model.sliding_window;
  return rank;
}

// Block recompute: each model stage recomputes its first N layers; the
// others keep their activations, as layers without recompute.
void add_kept_layers(const Shard& rank, TrainingConfig training, Workload& workload) {
  const int64_t recomputed = training.recompute_block_layers;
  training.recompute = Recompute::none;
  workload.kept_layer = layers::layer_work(rank, training);
  if (!workload.dense_layers.empty()) workload.kept_dense_layer = layers::layer_work(dense_shard(rank), training);
  if (!workload.sliding_layers.empty()) {
    workload.kept_sliding_layer = layers::layer_work(sliding_shard(rank), training);
    if (!workload.dense_layers.empty())
      workload.kept_sliding_dense_layer = layers::layer_work(dense_shard(sliding_shard(rank)), training);
  }
  for (const int layers : workload.stage_layers)
    for (int i = 0; i < layers; ++i) workload.kept_layers.push_back(i >= recomputed);
}

// A layer's place in layer_works (4 × sliding + 2 × kept + dense).
int layer_kind(const Workload& w, int index) {
  const bool dense = !w.dense_layers.empty() && w.dense_layers[index];
  const bool kept = !w.kept_layers.empty() && w.kept_layers[index];
  const bool sliding = !w.sliding_layers.empty() && w.sliding_layers[index];
  return 4 * sliding + 2 * kept + dense;
}

std::array<const UnitWork*, 8> layer_works(const Workload& w) {
  return {&w.layer,         &w.dense_layer,         &w.kept_layer,         &w.kept_dense_layer,
          &w.sliding_layer, &w.sliding_dense_layer, &w.kept_sliding_layer, &w.kept_sliding_dense_layer};
}

}  // namespace

Workload build_workload(const Scenario& scenario) {
  const Shard rank = layers::make_shard(scenario, scenario.parallel.tensor);
  const TrainingConfig& training = scenario.training;
  const ModelConfig& model = scenario.model;

  Workload workload;
  workload.layer = layers::layer_work(rank, training);
  if (model.mixes_dense_and_moe_layers()) {
    workload.dense_layer = layers::layer_work(dense_shard(rank), training);
    for (int64_t layer = 0; layer < model.num_layers; ++layer) workload.dense_layers.push_back(!model.is_moe_layer(layer));
  }
  if (std::find(model.sliding_layers.begin(), model.sliding_layers.end(), true) != model.sliding_layers.end()) {
    workload.sliding_layer = layers::layer_work(sliding_shard(rank), training);
    if (!workload.dense_layers.empty())
      workload.sliding_dense_layer = layers::layer_work(dense_shard(sliding_shard(rank)), training);
    workload.sliding_layers = model.sliding_layers;
  }
  workload.embedding = layers::embedding_work(rank);
  workload.head = layers::head_work(rank);
  workload.total_parameters = count_parameters(model).total;

  // Stages balanced (pipeline_layers auto) as if every layer were recomputed.
  workload.stage_layers = stage_layer_counts(scenario, workload);
  if (training.recompute_block_layers > 0) add_kept_layers(rank, training, workload);

  // Every TP (and CP) rank of every micro-batch of the global batch.
  const double rank_micro_batches =
      double(rank.tp * rank.cp) * double(training.global_batch_size) / double(training.micro_batch_size);
  const auto layer_works = workload.layer_works_among(0, int(model.num_layers));
  double layer_flops = 0;
  for (const auto& [work, layers] : layer_works) layer_flops += layers * training_flops(*work);
  workload.model_flops_per_step =
      rank_micro_batches * (layer_flops + training_flops(workload.embedding) + training_flops(workload.head));
  // Only the transformer layers are recomputed.
  workload.hardware_flops_per_step = workload.model_flops_per_step;
  for (const auto& [work, layers] : layer_works)
    workload.hardware_flops_per_step += rank_micro_batches * layers * work->recompute.flops();
  workload.tokens_per_step = double(training.global_batch_size) * training.seq_length;
  if (scenario.parallel.grad_reduce_in_bf16) workload.grad_bytes_per_parameter = 2;
  // Megatron's scatter/gather optimisation: each TP rank sends its 1/t slice.
  workload.stage_boundary_bytes = rank.activation_tensor_bytes() / double(rank.tp);
  workload.cp_exchange_buffer_bytes = layers::cp_exchange_buffer_bytes(rank);
  if (model.tie_word_embeddings && scenario.parallel.pipeline > 1) {
    // The last stage holds the word embeddings the logits read, a copy of the first stage's.
    workload.tied_embedding_copy_parameters = double(rank.vocab) * rank.hidden;
    workload.head.parameters += workload.tied_embedding_copy_parameters;
  }
  return workload;
}

const UnitWork& Workload::layer_at(int index) const { return *layer_works(*this)[layer_kind(*this, index)]; }

std::vector<std::pair<const UnitWork*, int>> Workload::layer_works_among(int first_layer, int layers) const {
  std::array<int, 8> counts{};
  for (int index = first_layer; index < first_layer + layers; ++index) ++counts[layer_kind(*this, index)];
  const std::array<const UnitWork*, 8> works = layer_works(*this);
  std::vector<std::pair<const UnitWork*, int>> result;
  for (size_t i = 0; i < works.size(); ++i)
    if (counts[i] > 0) result.emplace_back(works[i], counts[i]);
  return result;
}

int Workload::dense_layers_among(int first_layer, int layers) const {
  if (dense_layers.empty()) return 0;
  return int(std::count(dense_layers.begin() + first_layer, dense_layers.begin() + first_layer + layers, true));
}

StageUnits stage_units(const Workload& workload, int stage) {
  const std::vector<int>& layers = workload.stage_layers;
  StageUnits units;
  units.embedding = stage == 0;
  units.first_layer = std::accumulate(layers.begin(), layers.begin() + stage, 0);
  units.layers = layers[stage];
  units.head = stage == static_cast<int>(layers.size()) - 1;
  return units;
}

}  // namespace simtrain
