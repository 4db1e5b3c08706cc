// Megatron-LM's pipeline layouts: which layers every (pipeline rank, chunk)
// holds, worked by hand from Megatron's rules, and the layouts Megatron
// refuses, refused naming the field.
#include <numeric>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/model/workload.hpp"
#include "sim/scenario/pipeline_layout_string.hpp"
#include "sim/step/memory_model.hpp"
#include "test_support.hpp"

using namespace simtrain;
using nlohmann::json;
using testing::AllOf;
using testing::HasSubstr;

namespace {

// The test fixture's model with `layers` layers on pp pipeline ranks,
// `parallelism` added to its parallelism section.
json layout_json(int layers, int pp, const json& parallelism, int micro_batches = 8) {
  json doc = fixtures::scenario_json(1, pp, 1, layers, "1f1b", 0, micro_batches);
  doc["parallelism"].erase("schedule");  // the fields choose it
  doc["parallelism"].update(parallelism);
  return doc;
}

std::vector<int64_t> stage_layers(int layers, int pp, const json& parallelism, int micro_batches = 8) {
  return fixtures::scenario_from(layout_json(layers, pp, parallelism, micro_batches)).parallel.stage_layers;
}

// Counts of `stages` model stages: `value` everywhere except the listed ones.
std::vector<int64_t> counts(size_t stages, int64_t value, const std::map<size_t, int64_t>& except = {}) {
  std::vector<int64_t> result(stages, value);
  for (const auto& [stage, count] : except) result.at(stage) = count;
  return result;
}

std::string error_of(int layers, int pp, const json& parallelism) {
  try {
    fixtures::scenario_from(layout_json(layers, pp, parallelism));
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for " << parallelism.dump();
  return "";
}

}  // namespace

TEST(PipelineLayoutString, ExpandsAsMegatronDoes) {
  // PipelineParallelLayerLayout.parse_str_to_list's own example, and
  // TransformerConfig's (E|(tt|)*2,(t|)*4,mL: pp 2, vpp 4).
  const std::vector<std::string> first = layout_stages("Ettt|(tt|)*3,m|L", "f", "x");
  EXPECT_EQ(first, (std::vector<std::string>{"Ettt", "tt", "tt", "tt", "m", "L"}));
  const std::vector<std::string> second = layout_stages("E|(tt|)*2,(t|)*4,mL", "f", "x");
  EXPECT_EQ(second, (std::vector<std::string>{"E", "tt", "tt", "t", "t", "t", "t", "mL"}));
  EXPECT_EQ(layout_stages("Et||t*2|L", "f", "x"), (std::vector<std::string>{"Et", "", "tt", "L"}));
}

TEST(PipelineLayoutString, RefusesWhatExpandsPastTheLimit) {
  EXPECT_THROW(layout_stages("E(tttt)*70000|L", "f", "x"), InputError);
  EXPECT_THROW(layout_stages("Et*99999999999|L", "f", "x"), InputError);
}

// Llama 3 405B's 126 layers over 16 stages, as Megatron's
// --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split
// splits them (get_num_layers_to_build): 126 + 2 = 128 "layers", 8 per rank;
// with v virtual stages 8 / v per chunk; the embedding takes one of stage
// (rank 0, chunk 0) and the loss one of (rank 15, chunk v-1).
TEST(PipelineLayout, Llama3AccountingForEmbeddingAndLoss) {
  const json accounting = {{"account_for_embedding_in_pipeline_split", true},
                           {"account_for_loss_in_pipeline_split", true}};
  // No interleaving: ranks 0 and 15 hold 7 layers, the others 8.
  EXPECT_EQ(stage_layers(126, 16, accounting), counts(16, 8, {{0, 7}, {15, 7}}));
  // v = 2 (model stage = chunk x 16 + rank): 4 per chunk; (0, 0) and (15, 1) 3.
  json two = accounting;
  two["num_virtual_stages_per_pipeline_rank"] = 2;
  EXPECT_EQ(stage_layers(126, 16, two, 16), counts(32, 4, {{0, 3}, {31, 3}}));
  // v = 8: one per chunk; (0, 0) holds the embedding alone, (15, 7) the loss alone.
  json eight = accounting;
  eight["num_virtual_stages_per_pipeline_rank"] = 8;
  EXPECT_EQ(stage_layers(126, 16, eight, 16), counts(128, 1, {{0, 0}, {127, 0}}));
  // --num-layers-per-virtual-pipeline-stage 2 counts the same 8 per rank: v = 4.
  json per_stage = accounting;
  per_stage["num_layers_per_virtual_pipeline_stage"] = 2;
  EXPECT_EQ(stage_layers(126, 16, per_stage, 16), counts(64, 2, {{0, 1}, {63, 1}}));
}

// --decoder-first/last-pipeline-num-layers (TransformerConfig.__post_init__,
// get_num_layers_to_build): the middle ranks share what is left evenly, and
// every rank's layers are even over its chunks.
TEST(PipelineLayout, Llama3UnevenFirstAndLastStages) {
  // Llama 3's one layer fewer on the first and last stage: 7 + 14 x 8 + 7.
  const json fewer = {{"decoder_first_pipeline_num_layers", 7}, {"decoder_last_pipeline_num_layers", 7}};
  EXPECT_EQ(stage_layers(126, 16, fewer), counts(16, 8, {{0, 7}, {15, 7}}));
  // Interleaved, Megatron needs each count a multiple of v = 2: first 6
  // (3 + 3), middle (126 - 6 - 8) / 14 = 8 (4 + 4), last 8 (4 + 4).
  const json interleaved = {{"decoder_first_pipeline_num_layers", 6},
                            {"decoder_last_pipeline_num_layers", 8},
                            {"num_virtual_stages_per_pipeline_rank", 2}};
  EXPECT_EQ(stage_layers(126, 16, interleaved, 16), counts(32, 4, {{0, 3}, {16, 3}}));
  // Only the first given: 16 - 6 = 10 layers over the 3 other ranks is not even, 4 over 2 is.
  EXPECT_EQ(stage_layers(10, 3, {{"decoder_first_pipeline_num_layers", 6}}), (std::vector<int64_t>{6, 2, 2}));
  // pp 2, only the last: the first rank, a middle one, holds the rest.
  EXPECT_EQ(stage_layers(8, 2, {{"decoder_last_pipeline_num_layers", 3}}), (std::vector<int64_t>{5, 3}));
}

// 128 layers over 64 ranks with 3 virtual stages: 2 layers a rank do not
// split over 3 chunks (num_virtual_stages_per_pipeline_rank refused, and so
// is every first/last count: the 62 middle ranks would need a multiple of
// 3 each), but a pipeline_model_parallel_layout may leave chunks empty.
// "Et|(t|)*127,|*63,L" is 192 stages: Et, then 127 of t (chunks 0 and 1 of
// every rank: one layer each), then 63 empty ones and L (chunk 2).
TEST(PipelineLayout, OneHundredTwentyEightLayersOverSixtyFourRanksWithThreeVirtualStages) {
  EXPECT_THAT(error_of(128, 64, {{"num_virtual_stages_per_pipeline_rank", 3}}),
              AllOf(HasSubstr("parallelism.num_virtual_stages_per_pipeline_rank"),
                    HasSubstr("must divide the layers per pipeline stage (2), got 3")));
  const json layout = {{"pipeline_model_parallel_layout", "Et|(t|)*127,|*63,L"}};
  const Scenario s = fixtures::scenario_from(layout_json(128, 64, layout, 64));
  EXPECT_EQ(s.virtual_stages(), 3);
  EXPECT_EQ(s.parallel.schedule, ScheduleKind::interleaved_1f1b);
  EXPECT_EQ(s.parallel.stage_layers, counts(192, 1, [] {
              std::map<size_t, int64_t> empty;
              for (size_t stage = 128; stage < 192; ++stage) empty[stage] = 0;
              return empty;
            }()));
}

// A layout's stages hold what it says: pp 2, v 2 (stage = chunk x 2 + rank).
TEST(PipelineLayout, LayoutGivesEveryChunkItsLayers) {
  const Scenario s = fixtures::scenario_from(layout_json(8, 2, {{"pipeline_model_parallel_layout", "Et|ttt|tt|ttL"}}));
  EXPECT_EQ(s.virtual_stages(), 2);
  EXPECT_EQ(s.parallel.stage_layers, (std::vector<int64_t>{1, 3, 2, 2}));
  // One stage per rank: uneven stages, no interleaving.
  const Scenario plain = fixtures::scenario_from(layout_json(8, 2, {{"pipeline_model_parallel_layout", "Ettt|t*5L"}}));
  EXPECT_EQ(plain.virtual_stages(), 1);
  EXPECT_EQ(plain.parallel.schedule, ScheduleKind::one_f_one_b);
  EXPECT_EQ(plain.parallel.stage_layers, (std::vector<int64_t>{3, 5}));
}

// simtrain's pipeline_layers with interleaving: one count per rank, even
// over its chunks (as Megatron splits a rank's layers), or one per model stage.
TEST(PipelineLayout, PipelineLayersPerRankOrPerVirtualStage) {
  const json per_rank = {{"pipeline_layers", {6, 8, 8, 6}}, {"num_virtual_stages_per_pipeline_rank", 2}};
  EXPECT_EQ(stage_layers(28, 4, per_rank), (std::vector<int64_t>{3, 4, 4, 3, 3, 4, 4, 3}));
  const json per_stage = {{"pipeline_layers", {2, 4, 4, 4, 4, 4, 4, 2}}, {"num_virtual_stages_per_pipeline_rank", 2}};
  EXPECT_EQ(stage_layers(28, 4, per_stage), (std::vector<int64_t>{2, 4, 4, 4, 4, 4, 4, 2}));
}

// "auto" balances every model stage, chunks included: each holds a layer at
// least, they add up, and the stages with the embedding or the head hold fewer.
TEST(PipelineLayout, AutoBalancesVirtualStages) {
  const Scenario s = fixtures::scenario_from(
      layout_json(24, 4, {{"pipeline_layers", "auto"}, {"num_virtual_stages_per_pipeline_rank", 2}}));
  const Workload w = build_workload(s);
  ASSERT_EQ(w.stage_layers.size(), 8u);
  EXPECT_EQ(std::accumulate(w.stage_layers.begin(), w.stage_layers.end(), 0), 24);
  for (int layers : w.stage_layers) EXPECT_GE(layers, 1);
  EXPECT_LE(w.stage_layers.back(), w.stage_layers[3]);
}

// The memory model sums a rank's chunks as they are: weights of rank r are
// its layers' over all its chunks, plus the embedding or head it holds.
TEST(PipelineLayout, MemoryCountsEachChunksLayers) {
  const Scenario s = fixtures::scenario_from(layout_json(8, 2, {{"pipeline_model_parallel_layout", "Et|ttt|tt|ttL"}}));
  const Workload w = build_workload(s);
  const std::vector<MemoryBreakdown> memory = memory_per_pipeline_rank(s, w);
  const double bytes = w.weight_bytes_per_parameter;
  // Rank 0: stages 0 and 2 (1 + 2 layers) and the embedding; rank 1: stages 1 and 3 (3 + 2) and the head.
  EXPECT_DOUBLE_EQ(memory[0].weights_bytes, (3 * w.layer.parameters + w.embedding.parameters) * bytes);
  EXPECT_DOUBLE_EQ(memory[1].weights_bytes, (5 * w.layer.parameters + w.head.parameters) * bytes);
  EXPECT_GT(w.tied_embedding_copy_parameters, 0);  // the head's copy of the tied word embeddings
}

// ---- what Megatron refuses: the field and the reason ------------------------

struct RefusedLayout {
  std::string name;
  int layers, pp;
  json parallelism;
  std::string field, reason;
};

void PrintTo(const RefusedLayout& c, std::ostream* out) { *out << c.name; }

class RefusedPipelineLayout : public testing::TestWithParam<RefusedLayout> {};

TEST_P(RefusedPipelineLayout, NamesTheFieldAndTheReason) {
  const RefusedLayout& c = GetParam();
  const std::string message = error_of(c.layers, c.pp, c.parallelism);
  EXPECT_THAT(message, AllOf(HasSubstr("test.json"), HasSubstr("parallelism." + c.field), HasSubstr(c.reason)));
}

const RefusedLayout refused_layouts[] = {
    {"layers_do_not_add_up", 8, 2, {{"pipeline_layers", {4, 5}}}, "pipeline_layers", "must add up to num_hidden_layers (8), got 9"},
    {"per_stage_layers_do_not_add_up", 8, 2,
     {{"pipeline_layers", {2, 2, 2, 3}}, {"num_virtual_stages_per_pipeline_rank", 2}}, "pipeline_layers",
     "must add up to num_hidden_layers (8), got 9"},
    {"wrong_number_of_counts", 8, 2, {{"pipeline_layers", {2, 2, 4}}, {"num_virtual_stages_per_pipeline_rank", 2}},
     "pipeline_layers", "needs one layer count per pipeline stage (2) or per virtual stage (4), got 3"},
    {"rank_count_not_even_over_chunks", 8, 2, {{"pipeline_layers", {3, 5}}, {"num_virtual_stages_per_pipeline_rank", 2}},
     "pipeline_layers", "must be a multiple of its virtual stages (2), got 3 on stage 0"},
    {"first_stage_with_one_stage", 8, 1, {{"decoder_first_pipeline_num_layers", 8}},
     "decoder_first_pipeline_num_layers", "needs pipeline_model_parallel_size >= 2, got 1"},
    {"first_stage_zero", 8, 2, {{"decoder_first_pipeline_num_layers", 0}}, "decoder_first_pipeline_num_layers",
     "must be at least 1, got 0"},
    {"first_stage_not_a_multiple_of_virtual_stages", 126, 16,
     {{"decoder_first_pipeline_num_layers", 7}, {"decoder_last_pipeline_num_layers", 7}, {"num_virtual_stages_per_pipeline_rank", 2}},
     "decoder_first_pipeline_num_layers", "must be a multiple of the virtual stages per pipeline rank (2), got 7"},
    {"middle_layers_not_even", 126, 16, {{"decoder_first_pipeline_num_layers", 6}, {"decoder_last_pipeline_num_layers", 6}},
     "decoder_first_pipeline_num_layers", "leaves 114 layers, not a multiple of the 14 middle stages"},
    {"middle_layers_not_even_over_chunks", 19, 3,
     {{"decoder_first_pipeline_num_layers", 2}, {"decoder_last_pipeline_num_layers", 2}, {"num_virtual_stages_per_pipeline_rank", 2}},
     "decoder_first_pipeline_num_layers", "leaves 15 layers on each middle stage, not a multiple of the virtual stages per pipeline rank (2)"},
    {"first_and_last_exceed_the_model", 8, 3, {{"decoder_first_pipeline_num_layers", 5}, {"decoder_last_pipeline_num_layers", 5}},
     "decoder_first_pipeline_num_layers", "first and last stages hold 10 layers, more than num_hidden_layers (8)"},
    {"no_middle_stage_for_middle_layers", 8, 2, {{"decoder_first_pipeline_num_layers", 3}, {"decoder_last_pipeline_num_layers", 3}},
     "decoder_first_pipeline_num_layers", "leaves 2 layers for 0 middle stages"},
    {"uneven_stages_with_accounting", 8, 2, {{"decoder_first_pipeline_num_layers", 3}, {"account_for_loss_in_pipeline_split", true}},
     "decoder_first_pipeline_num_layers", "cannot be combined with account_for_loss_in_pipeline_split"},
    {"uneven_stages_with_layers_per_virtual_stage", 8, 2,
     {{"decoder_last_pipeline_num_layers", 2}, {"num_layers_per_virtual_pipeline_stage", 1}},
     "num_layers_per_virtual_pipeline_stage", "give num_virtual_stages_per_pipeline_rank"},
    {"two_ways_of_virtual_stages", 8, 2,
     {{"num_layers_per_virtual_pipeline_stage", 2}, {"num_virtual_stages_per_pipeline_rank", 2}},
     "num_virtual_stages_per_pipeline_rank", "cannot be combined with num_layers_per_virtual_pipeline_stage"},
    {"layout_with_virtual_stages", 8, 2,
     {{"pipeline_model_parallel_layout", "Et|ttt|tt|ttL"}, {"num_virtual_stages_per_pipeline_rank", 2}},
     "pipeline_model_parallel_layout", "cannot be combined with num_virtual_stages_per_pipeline_rank"},
    {"layout_with_first_stage", 8, 2, {{"pipeline_model_parallel_layout", "Ettt|t*5L"}, {"decoder_first_pipeline_num_layers", 3}},
     "pipeline_model_parallel_layout", "cannot be combined with decoder_first_pipeline_num_layers"},
    {"accounting_not_dividing", 8, 4, {{"account_for_embedding_in_pipeline_split", true}}, "pipeline_model_parallel_size",
     "must divide num_hidden_layers (8) plus the embedding and loss counted as layers (9), got 4"},
    {"accounting_not_even_over_chunks", 14, 2,
     {{"account_for_embedding_in_pipeline_split", true}, {"account_for_loss_in_pipeline_split", true},
      {"num_virtual_stages_per_pipeline_rank", 3}},
     "num_virtual_stages_per_pipeline_rank", "must divide the layers per pipeline stage (8), got 3"},
    {"virtual_stages_with_one_stage", 8, 1, {{"num_virtual_stages_per_pipeline_rank", 2}},
     "num_virtual_stages_per_pipeline_rank", "interleaving needs pipeline_model_parallel_size >= 2"},
    {"virtual_stages_without_interleaving", 8, 2, {{"num_virtual_stages_per_pipeline_rank", 2}, {"schedule", "1f1b"}},
     "num_virtual_stages_per_pipeline_rank", "only used by the interleaved_1f1b schedule, not 1f1b"},
    {"layout_chunks_without_interleaving", 8, 2, {{"pipeline_model_parallel_layout", "Et|ttt|tt|ttL"}, {"schedule", "zb_h1"}},
     "pipeline_model_parallel_layout", "has 2 stages per pipeline rank, which only interleaved_1f1b runs, not zb_h1"},
    {"layout_stages_not_a_multiple_of_pp", 8, 2, {{"pipeline_model_parallel_layout", "Et|ttt|ttttL"}},
     "pipeline_model_parallel_layout", "has 3 stages, not a multiple of pipeline_model_parallel_size (2)"},
    {"layout_layers_do_not_add_up", 8, 2, {{"pipeline_model_parallel_layout", "Et|tttL"}}, "pipeline_model_parallel_layout",
     "holds 4 transformer layers (t), but num_hidden_layers is 8"},
    {"layout_with_multi_token_prediction", 8, 2, {{"pipeline_model_parallel_layout", "Etttt|ttttmL"}},
     "pipeline_model_parallel_layout", "multi-token prediction layer (m)"},
    {"layout_with_an_unknown_letter", 8, 2, {{"pipeline_model_parallel_layout", "Etttt|ttxttL"}},
     "pipeline_model_parallel_layout", "'x' is not a layer"},
    {"layout_without_the_embedding_first", 8, 2, {{"pipeline_model_parallel_layout", "|Et*8|L|"}},
     "pipeline_model_parallel_layout", "must begin with the embedding (E) on the first stage"},
    {"layout_without_the_loss", 8, 2, {{"pipeline_model_parallel_layout", "Etttt|tttt"}}, "pipeline_model_parallel_layout",
     "must hold the loss (L) once, got 0"},
    {"layout_with_two_embeddings", 8, 2, {{"pipeline_model_parallel_layout", "Etttt|EttttL"}},
     "pipeline_model_parallel_layout", "must hold the embedding (E) once, got 2"},
    {"pipeline_layers_with_a_layout", 8, 2, {{"pipeline_model_parallel_layout", "Etttt|ttttL"}, {"pipeline_layers", {4, 4}}},
     "pipeline_layers", "cannot be combined with pipeline_model_parallel_layout"},
    {"pipeline_layers_with_layers_per_virtual_stage", 8, 2,
     {{"pipeline_layers", "auto"}, {"num_layers_per_virtual_pipeline_stage", 2}}, "num_layers_per_virtual_pipeline_stage",
     "cannot be combined with pipeline_layers"},
    {"auto_with_more_virtual_stages_than_layers", 6, 2,
     {{"pipeline_layers", "auto"}, {"num_virtual_stages_per_pipeline_rank", 4}}, "pipeline_layers",
     "\"auto\" needs a layer per virtual stage (8), got 6 layers"},
};

INSTANTIATE_TEST_SUITE_P(PipelineLayout, RefusedPipelineLayout, testing::ValuesIn(refused_layouts),
                         [](const testing::TestParamInfo<RefusedLayout>& info) { return info.param.name; });
