#include "sim/scenario/pipeline_layout.hpp"

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"
#include "sim/scenario/pipeline_layout_string.hpp"

namespace simtrain {

namespace {

constexpr const char* kLayersPerVirtualStage = "num_layers_per_virtual_pipeline_stage";
constexpr const char* kVirtualStagesPerRank = "num_virtual_stages_per_pipeline_rank";
constexpr const char* kFirstStage = "decoder_first_pipeline_num_layers";
constexpr const char* kLastStage = "decoder_last_pipeline_num_layers";
constexpr const char* kEmbeddingInSplit = "account_for_embedding_in_pipeline_split";
constexpr const char* kLossInSplit = "account_for_loss_in_pipeline_split";
constexpr const char* kLayout = "pipeline_model_parallel_layout";
constexpr const char* kPipelineLayers = "pipeline_layers";
constexpr const char* kPipelineSize = "pipeline_model_parallel_size";

std::string str(int64_t v) { return std::to_string(v); }

// A field, and whether the scenario gives it.
struct Given {
  const char* field;
  bool given;
};

class LayoutRules {
public:
  LayoutRules(int64_t num_layers, ParallelConfig& p, const std::string& file)
      : layers_(num_layers),
        p_(p),
        file_(file),
        first_(p.first_stage_layers > 0),
        last_(p.last_stage_layers > 0),
        layout_(!p.layer_layout.empty()),
        listed_(!p.pipeline_layers.empty() || p.balance_pipeline_layers) {}

  void resolve() {
    check_combinations();
    if (layout_)
      p_.stage_layers = from_layout();
    else if (first_ || last_)
      p_.stage_layers = uneven_first_and_last();
    else if (!p_.pipeline_layers.empty())
      p_.stage_layers = from_pipeline_layers();
    else if (p_.balance_pipeline_layers)
      check_balanced();
    else
      p_.stage_layers = even();
  }

private:
  [[noreturn]] void fail(const std::string& field, const std::string& reason) const {
    throw InputError(file_, "parallelism." + field, reason);
  }

  void refuse_together(const char* field, bool given, std::initializer_list<Given> others,
                       const std::string& why) const {
    if (!given) return;
    for (const Given& other : others)
      if (other.given) fail(field, "cannot be combined with " + std::string(other.field) + why);
  }

  const char* virtual_stages_field() const {
    return p_.layers_per_virtual_stage  ? kLayersPerVirtualStage
           : p_.virtual_stages_per_rank ? kVirtualStagesPerRank
                                        : kLayout;
  }

  void check_combinations() const {
    const bool per_stage = p_.layers_per_virtual_stage > 0, per_rank = p_.virtual_stages_per_rank > 0;
    const bool embedding = p_.embedding_in_split, loss = p_.loss_in_split;
    // arguments.py validate_args: one way of giving virtual stages.
    const std::string one_way = " (virtual stages are given one way)";
    refuse_together(kVirtualStagesPerRank, per_rank, {{kLayersPerVirtualStage, per_stage}}, one_way);
    refuse_together(kLayout, layout_, {{kLayersPerVirtualStage, per_stage}, {kVirtualStagesPerRank, per_rank}},
                    one_way);
    // TransformerConfig.__post_init__: a layout places every unit; uneven
    // first and last stages count no embedding or loss.
    refuse_together(kLayout, layout_,
                    {{kFirstStage, first_}, {kLastStage, last_}, {kEmbeddingInSplit, embedding}, {kLossInSplit, loss}},
                    " (the layout places every layer)");
    for (const Given uneven : {Given{kFirstStage, first_}, Given{kLastStage, last_}})
      refuse_together(uneven.field, uneven.given, {{kEmbeddingInSplit, embedding}, {kLossInSplit, loss}}, "");
    // arguments.py: uneven stages take their virtual stages as a count per
    // rank (and so do simtrain's own lists).
    refuse_together(kLayersPerVirtualStage, per_stage,
                    {{kFirstStage, first_}, {kLastStage, last_}, {kPipelineLayers, listed_}},
                    " (with uneven stages give num_virtual_stages_per_pipeline_rank)");
    refuse_together(kPipelineLayers, listed_,
                    {{kFirstStage, first_},
                     {kLastStage, last_},
                     {kEmbeddingInSplit, embedding},
                     {kLossInSplit, loss},
                     {kLayout, layout_}},
                    " (it gives every stage's layers)");
    // Megatron would take a first-stage count with one stage as the whole model; it says nothing then.
    if ((first_ || last_) && p_.pipeline < 2)
      fail(first_ ? kFirstStage : kLastStage, "needs pipeline_model_parallel_size >= 2, got " + str(p_.pipeline));
    if ((per_stage || per_rank || p_.virtual_stages > 1) && p_.pipeline < 2)
      fail(virtual_stages_field(), "interleaving needs pipeline_model_parallel_size >= 2");
  }

  // Each rank's layers, even over its chunks (Megatron's
  // get_num_layers_to_build: the rank's count divided by the virtual stages).
  std::vector<int64_t> split_over_chunks(const std::vector<int64_t>& per_rank) const {
    const int64_t p = p_.pipeline, v = p_.virtual_stages;
    std::vector<int64_t> stages(p * v);
    for (int64_t chunk = 0; chunk < v; ++chunk)
      for (int64_t rank = 0; rank < p; ++rank) stages[chunk * p + rank] = per_rank[rank] / v;
    return stages;
  }

  // PipelineParallelLayerLayout.validate_layer_layout: the embedding once,
  // first; the loss once, last; as many layers as the model's. Megatron
  // builds the embedding on the first stage and the loss on the last
  // whatever the layout says, so they must be there.
  std::vector<int64_t> from_layout() const {
    const std::vector<std::string> stages =
        layout_stages(p_.layer_layout, file_, std::string("parallelism.") + kLayout);
    std::vector<int64_t> counts;
    int64_t embeddings = 0, losses = 0;
    for (const std::string& stage : stages) {
      for (char c : stage) {
        if (c == 'm') fail(kLayout, "places a multi-token prediction layer (m); the model has none");
        if (c != 'E' && c != 't' && c != 'L')
          fail(kLayout, "'" + std::string(1, c) +
                            "' is not a layer (E embedding, t transformer layer, L loss, | between stages)");
      }
      counts.push_back(std::count(stage.begin(), stage.end(), 't'));
      embeddings += std::count(stage.begin(), stage.end(), 'E');
      losses += std::count(stage.begin(), stage.end(), 'L');
    }
    if (embeddings != 1) fail(kLayout, "must hold the embedding (E) once, got " + str(embeddings));
    if (losses != 1) fail(kLayout, "must hold the loss (L) once, got " + str(losses));
    if (!stages.front().starts_with('E')) fail(kLayout, "must begin with the embedding (E) on the first stage");
    if (!stages.back().ends_with('L')) fail(kLayout, "must end with the loss (L) on the last stage");
    const int64_t placed = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    if (placed != layers_)
      fail(kLayout, "holds " + str(placed) + " transformer layers (t), but num_hidden_layers is " + str(layers_));
    return counts;
  }

  // TransformerConfig.__post_init__ and get_num_layers_to_build with
  // --decoder-first/last-pipeline-num-layers: the first (last) rank holds
  // its count, the ranks between share the rest evenly, each rank's layers
  // even over its chunks.
  std::vector<int64_t> uneven_first_and_last() const {
    const int64_t v = p_.virtual_stages, first = p_.first_stage_layers, last = p_.last_stage_layers;
    for (const auto& [field, count] : {std::pair{kFirstStage, first}, std::pair{kLastStage, last}})
      if (count % v != 0)
        fail(field, "must be a multiple of the virtual stages per pipeline rank (" + str(v) + "), got " + str(count));
    const char* field = first_ ? kFirstStage : kLastStage;
    const int64_t middle_stages = p_.pipeline - first_ - last_, middle_layers = layers_ - first - last;
    if (middle_layers < 0)
      fail(field, "first and last stages hold " + str(first + last) + " layers, more than num_hidden_layers (" +
                      str(layers_) + ")");
    if ((middle_layers == 0) != (middle_stages == 0))
      fail(field, "leaves " + str(middle_layers) + " layers for " + str(middle_stages) + " middle stages");
    if (middle_stages && middle_layers % middle_stages != 0)
      fail(field,
           "leaves " + str(middle_layers) + " layers, not a multiple of the " + str(middle_stages) + " middle stages");
    const int64_t middle = middle_stages ? middle_layers / middle_stages : 0;
    if (middle % v != 0)
      fail(field, "leaves " + str(middle) +
                      " layers on each middle stage, not a multiple of the virtual stages per pipeline rank (" +
                      str(v) + ")");
    std::vector<int64_t> per_rank(p_.pipeline, middle);
    if (first_) per_rank.front() = first;
    if (last_) per_rank.back() = last;
    return split_over_chunks(per_rank);
  }

  // simtrain's pipeline_layers: one count per pipeline rank, even over its
  // chunks as Megatron splits a rank's layers, or one per model stage.
  std::vector<int64_t> from_pipeline_layers() const {
    const std::vector<int64_t>& counts = p_.pipeline_layers;
    const int64_t p = p_.pipeline, v = p_.virtual_stages, given = static_cast<int64_t>(counts.size());
    if (given != p && given != p * v)
      fail(kPipelineLayers, "needs one layer count per pipeline stage (" + str(p) + ")" +
                                (v > 1 ? " or per virtual stage (" + str(p * v) + ")" : "") + ", got " + str(given));
    const int64_t layers = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    if (layers != layers_)
      fail(kPipelineLayers, "must add up to num_hidden_layers (" + str(layers_) + "), got " + str(layers));
    if (given == p * v) return counts;
    for (int64_t rank = 0; rank < p; ++rank)
      if (counts[rank] % v != 0)
        fail(kPipelineLayers, "a pipeline stage's layers must be a multiple of its virtual stages (" + str(v) +
                                  "), got " + str(counts[rank]) + " on stage " + str(rank));
    return split_over_chunks(counts);
  }

  // "auto" (sim/model/partition.hpp) gives every model stage a layer at least.
  void check_balanced() const {
    const int64_t stages = p_.pipeline * p_.virtual_stages;
    if (layers_ >= stages) return;
    if (p_.virtual_stages == 1)
      fail(kPipelineSize, "must not exceed num_hidden_layers (" + str(layers_) + "), got " + str(p_.pipeline));
    fail(kPipelineLayers,
         "\"auto\" needs a layer per virtual stage (" + str(stages) + "), got " + str(layers_) + " layers");
  }

  // get_num_layers_to_build without uneven stages: the layers, with the
  // embedding and loss counted as layers where asked, even over the ranks
  // and their chunks; the first (last) model stage then builds one
  // transformer layer fewer for the embedding (loss) it holds.
  std::vector<int64_t> even() const {
    const int64_t counted = layers_ + p_.embedding_in_split + p_.loss_in_split;
    const bool accounted = counted != layers_;
    if (counted % p_.pipeline != 0)
      fail(kPipelineSize,
           "must divide num_hidden_layers (" + str(layers_) + ")" +
               (accounted ? " plus the embedding and loss counted as layers (" + str(counted) + ")" : "") + ", got " +
               str(p_.pipeline));
    const int64_t per_rank = counted / p_.pipeline;
    if (const int64_t per_stage = p_.layers_per_virtual_stage) {
      if (per_rank % per_stage != 0)
        fail(kLayersPerVirtualStage,
             "must divide the layers per pipeline stage (" + str(per_rank) + "), got " + str(per_stage));
      p_.virtual_stages = per_rank / per_stage;
    } else if (per_rank % p_.virtual_stages != 0) {
      fail(kVirtualStagesPerRank,
           "must divide the layers per pipeline stage (" + str(per_rank) + "), got " + str(p_.virtual_stages));
    }
    std::vector<int64_t> stages = split_over_chunks(std::vector<int64_t>(p_.pipeline, per_rank));
    stages.front() -= p_.embedding_in_split;
    stages.back() -= p_.loss_in_split;
    return stages;
  }

  const int64_t layers_;
  ParallelConfig& p_;
  const std::string& file_;
  const bool first_, last_, layout_, listed_;
};

}  // namespace

void parse_pipeline_layout(JsonFields& f, const std::string& file, ParallelConfig& p) {
  p.layers_per_virtual_stage = f.integer(kLayersPerVirtualStage).value_or(0);
  p.virtual_stages_per_rank = f.integer(kVirtualStagesPerRank).value_or(0);
  p.first_stage_layers = f.integer(kFirstStage).value_or(0);
  p.last_stage_layers = f.integer(kLastStage).value_or(0);
  p.embedding_in_split = f.boolean(kEmbeddingInSplit).value_or(false);
  p.loss_in_split = f.boolean(kLossInSplit).value_or(false);
  if (p.virtual_stages_per_rank) p.virtual_stages = p.virtual_stages_per_rank;
  if (f.has(kLayout)) {
    p.layer_layout = *f.text(kLayout);
    if (p.layer_layout.empty()) f.fail(kLayout, "must not be empty");
    const auto stages =
        static_cast<int64_t>(layout_stages(p.layer_layout, file, std::string("parallelism.") + kLayout).size());
    if (stages % p.pipeline != 0)
      f.fail(kLayout, "has " + str(stages) + " stages, not a multiple of pipeline_model_parallel_size (" +
                          str(p.pipeline) + ")");
    p.virtual_stages = stages / p.pipeline;
  }
  if (f.has(kPipelineLayers)) {
    const nlohmann::json& layers = f.raw(kPipelineLayers);
    if (layers == "auto") {
      p.balance_pipeline_layers = true;
    } else {
      if (!layers.is_array() || layers.empty())
        f.fail(kPipelineLayers, "expected \"auto\" or a list of layer counts, one per stage");
      for (const nlohmann::json& count : layers) {
        if (!count.is_number_integer() || count.get<int64_t>() < 1 || count.get<int64_t>() > limits::max_layers)
          f.fail(kPipelineLayers,
                 "layer counts must be integers from 1 to " + str(limits::max_layers) + ", got " + count.dump());
        p.pipeline_layers.push_back(count.get<int64_t>());
      }
    }
  }
}

bool gives_virtual_stages(const ParallelConfig& p) {
  return p.layers_per_virtual_stage || p.virtual_stages_per_rank || p.virtual_stages > 1;
}

void resolve_pipeline_layout(int64_t num_layers, ParallelConfig& p, const std::string& file) {
  LayoutRules(num_layers, p, file).resolve();
}

}  // namespace simtrain
