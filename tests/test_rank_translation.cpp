// build_program lowers the first rank of each pipeline coordinate and
// translates its list to the others (sim/program/rank_translation.hpp),
// storing the lowered lists only (sim/program/task_table.hpp): the Program
// must be the one lowering every rank gives, field for field.
#include <gtest/gtest.h>

#include "sim/program/program_builder.hpp"
#include "sim/program/rank_translation.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

auto fields(const Task& t) {
  return std::tuple(t.id, t.rank, t.stage, t.microbatch, t.layer_begin, t.layer_end, t.work, t.peer, t.group, t.count,
                    t.bytes, t.stream, t.kind, t.dim, t.part_of_stage, t.backward, t.joins_batch);
}

void expect_same_program(const Program& built, const Program& full) {
  ASSERT_EQ(built.tasks.size(), full.tasks.size());
  for (size_t i = 0; i < full.tasks.size(); ++i) {
    const int id = static_cast<int>(i);
    ASSERT_EQ(fields(built.tasks[id]), fields(full.tasks[id])) << task_name(full, full.tasks[id]);
    ASSERT_TRUE(std::ranges::equal(built.deps(id), full.deps(id))) << task_name(full, full.tasks[id]);
  }
  ASSERT_EQ(built.rank_lists(), full.rank_lists());
  for (int rank = 0; rank < full.rank_lists(); ++rank)
    EXPECT_TRUE(std::ranges::equal(built.rank_tasks(rank), full.rank_tasks(rank))) << "rank " << rank;
  ASSERT_EQ(built.works.size(), full.works.size());
  for (size_t w = 0; w < full.works.size(); ++w) EXPECT_EQ(built.works[w].name, full.works[w].name);
}

// The Program as built (the first rank of each pipeline coordinate stored,
// the others read from it translated), and with every rank's list stored,
// translated in the numbering, is the one lowering every rank gives.
void expect_lowered_in_full(const Scenario& scenario, const std::string& what) {
  SCOPED_TRACE(what);
  const Workload workload = build_workload(scenario);
  const Program full = build_program(scenario, workload, {.lower_every_rank = true});
  {
    SCOPED_TRACE("as built");
    const Program built = build_program(scenario, workload);
    expect_same_program(built, full);
    size_t stored = 0;
    for (int rank = 0; rank < built.world_size; ++rank) {
      const int source = built.tasks.source_rank(rank);
      if (source == rank) stored += built.rank_tasks(rank).size();
      else EXPECT_EQ(built.coords[source].pp, built.coords[rank].pp) << "rank " << rank << " reads " << source;
    }
    EXPECT_EQ(built.tasks.stored_tasks(), stored);
  }
  {
    SCOPED_TRACE("every rank stored");
    expect_same_program(build_program(scenario, workload, {.store_every_rank = true}), full);
  }
}

nlohmann::json with(nlohmann::json doc, const nlohmann::json& parallelism) {
  doc["parallelism"].update(parallelism);
  return doc;
}

}  // namespace

TEST(RankTranslation, GivesTheProgramOfLoweringEveryRank) {
  for (const std::string schedule : {"gpipe", "1f1b", "zb_h1", "interleaved_1f1b"})
    for (int zero : {0, 1, 3}) {
      nlohmann::json doc = fixtures::scenario_json(2, 4, 4, 8, schedule, schedule == "interleaved_1f1b" ? 1 : 0);
      doc["parallelism"]["zero_stage"] = zero;
      doc["parallelism"]["sequence_parallel"] = true;
      doc["parallelism"]["overlap_grad_reduce"] = zero < 3;
      expect_lowered_in_full(fixtures::scenario_from(doc), schedule + " zero" + std::to_string(zero));
    }
}

TEST(RankTranslation, CoversEveryDataParallelSynchronisation) {
  const nlohmann::json doc = fixtures::scenario_json(2, 2, 8, 4, "1f1b");
  expect_lowered_in_full(fixtures::scenario_from(with(doc, {{"dp_sync", "hierarchical"}})), "hierarchical");
  expect_lowered_in_full(fixtures::scenario_from(with(doc, {{"dp_sync", "tree"}})), "tree");
  expect_lowered_in_full(
      fixtures::scenario_from(with(doc, {{"dp_sync", "parameter_server"}, {"parameter_servers", 2}})),
      "parameter servers");
  expect_lowered_in_full(fixtures::scenario_from(with(doc, {{"dp_compression_ratio", 4}})), "compression");
  expect_lowered_in_full(
      fixtures::scenario_from(with(doc, {{"zero_stage", 1}, {"overlap_param_gather", true}, {"overlap_grad_reduce", true}})),
      "overlapped gathers");
}

TEST(RankTranslation, CoversShippedScenarios) {
  expect_lowered_in_full(load_scenario("tiny-4gpu"), "tiny-4gpu");
  expect_lowered_in_full(load_scenario("gpt3-175b-1024xh100", {"cluster.num_gpus=128"}), "gpt3-175b on 128 GPUs");
  expect_lowered_in_full(load_scenario("megatron-18.4b-256xa100"), "megatron-18.4b");
  expect_lowered_in_full(load_scenario("mixtral-8x7b-64xh100"), "mixtral-8x7b (expert parallelism)");
  expect_lowered_in_full(load_scenario("qwen3-30b-a3b-16xh100"), "qwen3-30b-a3b (expert parallelism, interleaved)");
}

TEST(RankTranslation, StoresTheFirstRankOfEachPipelineCoordinateOnly) {
  const Scenario scenario = load_scenario("gpt3-175b-1024xh100", {"cluster.num_gpus=128"});  // TP8 PP8 DP2
  const Program program = build_program(scenario, build_workload(scenario));
  size_t stored = 0;
  for (int rank = 0; rank < program.world_size; ++rank) {
    const int first = program.coords[rank].pp * program.world_size / program.pipeline_size;
    EXPECT_EQ(program.tasks.source_rank(rank), first) << "rank " << rank;
    if (rank == first) stored += program.rank_tasks(rank).size();
  }
  EXPECT_EQ(program.tasks.stored_tasks(), stored);
}

TEST(RankTranslation, JoinsRanksOfOnePipelineCoordinateOnly) {
  const Scenario scenario = fixtures::scenario_from(fixtures::scenario_json(2, 2, 2, 4, "1f1b"));
  const Workload workload = build_workload(scenario);
  const LoweringContext context(scenario, workload);
  EXPECT_TRUE(RankTranslation::between(context, 0, 3));    // tp1 dp1 pp0
  EXPECT_FALSE(RankTranslation::between(context, 0, 4));   // pp1
}
