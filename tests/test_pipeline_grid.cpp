// The step x pipeline-rank grid of a schedule, and `simtrain schedule --grid`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/program/pipeline_grid.hpp"
#include "sim/program/program_builder.hpp"
#include "test_support.hpp"

using namespace simtrain;
using testing::HasSubstr;

namespace {

// Megatron's 1F1B: warm-up forwards, one forward and one backward each step, cool-down backwards.
TEST(PipelineGrid, OneFOneBOnFourStagesWithEightMicroBatches) {
  EXPECT_EQ(format_pipeline_grid({ScheduleKind::one_f_one_b, 4, 1}, pipeline_schedule(ScheduleKind::one_f_one_b, 4, 8, 1)),
            "         pp0 pp1 pp2 pp3\n"
            "Step 00: F0\n"
            "Step 01: F1  F0\n"
            "Step 02: F2  F1  F0\n"
            "Step 03: F3  F2  F1  F0\n"
            "Step 04:             B0\n"
            "Step 05:         B0  F1\n"
            "Step 06:     B0  F2  B1\n"
            "Step 07: B0  F3  B1  F2\n"
            "Step 08: F4  B1  F3  B2\n"
            "Step 09: B1  F4  B2  F3\n"
            "Step 10: F5  B2  F4  B3\n"
            "Step 11: B2  F5  B3  F4\n"
            "Step 12: F6  B3  F5  B4\n"
            "Step 13: B3  F6  B4  F5\n"
            "Step 14: F7  B4  F6  B5\n"
            "Step 15: B4  F7  B5  F6\n"
            "Step 16:     B5  F7  B6\n"
            "Step 17: B5      B6  F7\n"
            "Step 18:     B6      B7\n"
            "Step 19: B6      B7\n"
            "Step 20:     B7\n"
            "Step 21: B7\n");
}

// Two chunks per rank: model stage 2 is chunk 1 of pipeline rank 0 ("c1").
TEST(PipelineGrid, InterleavedOnTwoRanksWithTwoChunks) {
  EXPECT_EQ(format_pipeline_grid({ScheduleKind::interleaved_1f1b, 2, 2},
                                 pipeline_schedule(ScheduleKind::interleaved_1f1b, 2, 4, 2)),
            "         pp0  pp1\n"
            "Step 00: F0\n"
            "Step 01: F1   F0\n"
            "Step 02: F0c1 F1\n"
            "Step 03: F1c1 F0c1\n"
            "Step 04: F2   B0c1\n"
            "Step 05: B0c1 F1c1\n"
            "Step 06: F3   B1c1\n"
            "Step 07: B1c1 F2\n"
            "Step 08: F2c1 B0\n"
            "Step 09: B0   F3\n"
            "Step 10: F3c1 B1\n"
            "Step 11: B1   F2c1\n"
            "Step 12:      B2c1\n"
            "Step 13: B2c1 F3c1\n"
            "Step 14:      B3c1\n"
            "Step 15: B3c1 B2\n"
            "Step 16: B2   B3\n"
            "Step 17: B3\n");
}

// ZB-H1: rank r holds back r weight-gradient passes (W) into the cool-down.
TEST(PipelineGrid, ZeroBubbleH1FillsTheCoolDownWithWeightGradients) {
  EXPECT_EQ(format_pipeline_grid({ScheduleKind::zb_h1, 4, 1}, pipeline_schedule(ScheduleKind::zb_h1, 4, 4, 1)),
            "         pp0 pp1 pp2 pp3\n"
            "Step 00: F0\n"
            "Step 01: F1  F0\n"
            "Step 02: F2  F1  F0\n"
            "Step 03: F3  F2  F1  F0\n"
            "Step 04:             B0\n"
            "Step 05:         B0  F1\n"
            "Step 06:     B0  F2  B1\n"
            "Step 07: B0  F3  B1  F2\n"
            "Step 08: W0  B1  F3  B2\n"
            "Step 09: B1  W0  B2  F3\n"
            "Step 10: W1  B2  W0  B3\n"
            "Step 11: B2  W1  B3  W0\n"
            "Step 12: W2  B3  W1  W1\n"
            "Step 13: B3  W2  W2  W2\n"
            "Step 14: W3  W3  W3  W3\n");
}

// DualPipe on 2 ranks: micro-batches 0-3 enter at pp0 (chunk 0), 4-7 at pp1
// (chunk 1); after the first main-phase step at the fold (F1, B4c1 alone),
// pairs F& B& (each B's W after it).
TEST(PipelineGrid, DualPipeRunsBothDirectionsInPairs) {
  EXPECT_EQ(format_pipeline_grid({ScheduleKind::dualpipe, 2, 1}, pipeline_schedule(ScheduleKind::dualpipe, 2, 8, 1)),
            "         pp0   pp1\n"
            "Step 00: F0    F4c1\n"
            "Step 01: F4c1  F0\n"
            "Step 02: F1    F5c1\n"
            "Step 03: B4c1  B0\n"
            "Step 04: W4c1  W0\n"
            "Step 05: F5c1& F1&\n"
            "Step 06: B0&   B4c1&\n"
            "Step 07: W0    W4c1\n"
            "Step 08: F2&   F6c1&\n"
            "Step 09: B5c1& B1&\n"
            "Step 10: W5c1  W1\n"
            "Step 11: F6c1& F2&\n"
            "Step 12: B1&   B5c1&\n"
            "Step 13: W1    W5c1\n"
            "Step 14: F3&   F7c1&\n"
            "Step 15: B6c1& B2&\n"
            "Step 16: W6c1  W2\n"
            "Step 17: F7c1& F3&\n"
            "Step 18: B2&   B6c1&\n"
            "Step 19: W2    W6c1\n"
            "Step 20: B7c1  B3\n"
            "Step 21: W7c1  W3\n"
            "Step 22: B3    B7c1\n"
            "Step 23: W3    W7c1\n");
}

TEST(PipelineGrid, ADeadlockShowsTheGridUpToIt) {
  const std::vector<std::vector<PipelineAction>> crossed = {
      {{TaskKind::F, 0, 0}, {TaskKind::B, 0, 0}},
      {{TaskKind::B, 0, 0}, {TaskKind::F, 0, 0}},  // its backward before the forward it needs
  };
  try {
    format_pipeline_grid({ScheduleKind::one_f_one_b, 2, 1}, crossed);
    FAIL() << "no deadlock found";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "pipeline schedule deadlocks: at step 1 no rank can start its next action (in parentheses), as each "
              "waits for an input not yet produced:\n"
              "        pp0  pp1\n"
              "Step 0: F0\n"
              "Step 1: (B0) (B0)  <-- next actions, none can start\n");
  }
}

// The actions each pipeline rank runs in `program`, read from the compute
// tasks of its first GPU (tp 0, dp 0): one per F, B or W pass, the pieces of
// a backward split at gradient buckets counted once, recomputation left out.
std::vector<std::vector<PipelineAction>> pipeline_actions(const Program& program) {
  std::vector<std::vector<PipelineAction>> ranks(program.pipeline_size);
  for (int rank = 0; rank < program.world_size; ++rank) {
    const RankCoord& coord = program.coords[rank];
    if (coord.tp != 0 || coord.dp != 0) continue;
    std::vector<PipelineAction>& actions = ranks[coord.pp];
    for (int id : program.rank_tasks(rank)) {
      const Task& t = program.tasks[id];
      if (t.kind != TaskKind::F && t.kind != TaskKind::B && t.kind != TaskKind::W) continue;
      const PipelineAction action{t.kind, t.stage / program.pipeline_size, t.microbatch};  // DualPipe's too
      if (actions.empty() || actions.back() != action) actions.push_back(action);  // a split pass counts once
    }
  }
  return ranks;
}

// The Program runs the schedule's actions: recomputation, bucket pieces, TP
// and DP ranks change nothing in the grid.
TEST(PipelineGrid, ProgramRunsTheScheduleActions) {
  struct Shape {
    nlohmann::json scenario;
    ScheduleKind schedule;
    int p, m, v;
  };
  nlohmann::json recomputing = fixtures::scenario_json(2, 4, 2, 8, "1f1b", 0, 8);
  recomputing["training"]["recompute_granularity"] = "full";
  nlohmann::json bucketed = fixtures::scenario_json(1, 4, 2, 8, "zb_h1", 0, 6);
  bucketed["parallelism"].update({{"overlap_grad_reduce", true}, {"ddp_bucket_size", 1e5}});
  const std::vector<Shape> shapes = {
      {recomputing, ScheduleKind::one_f_one_b, 4, 8, 1},
      {bucketed, ScheduleKind::zb_h1, 4, 6, 1},
      {fixtures::scenario_json(2, 2, 2, 8, "interleaved_1f1b", 2, 4), ScheduleKind::interleaved_1f1b, 2, 4, 2},
      {fixtures::scenario_json(1, 3, 1, 6, "gpipe", 0, 5), ScheduleKind::gpipe, 3, 5, 1},
      {fixtures::scenario_json(2, 4, 2, 8, "dualpipe", 0, 8), ScheduleKind::dualpipe, 4, 8, 1},
      {fixtures::scenario_json(1, 2, 2, 8, "dualpipe_v", 0, 4), ScheduleKind::dualpipe_v, 2, 4, 2},
  };
  for (const Shape& shape : shapes) {
    const Scenario scenario = fixtures::scenario_from(shape.scenario);
    std::vector<std::vector<PipelineAction>> expected = pipeline_schedule(shape.schedule, shape.p, shape.m, shape.v);
    for (auto& actions : expected)
      for (PipelineAction& a : actions) a.overlapped = false;  // a task does not say it
    EXPECT_EQ(pipeline_actions(build_program(scenario, build_workload(scenario))), expected)
        << shape.scenario["parallelism"];
  }
}

TEST(PipelineGrid, ScheduleCommandPrintsTheGrid) {
  const std::string tiny_grid =
      "         pp0 pp1\n"
      "Step 00: F0\n"
      "Step 01: F1  F0\n"
      "Step 02:     B0\n"
      "Step 03: B0  F1\n"
      "Step 04: F2  B1\n"
      "Step 05: B1  F2\n"
      "Step 06: F3  B2\n"
      "Step 07: B2  F3\n"
      "Step 08: F4  B3\n"
      "Step 09: B3  F4\n"
      "Step 10: F5  B4\n"
      "Step 11: B4  F5\n"
      "Step 12: F6  B5\n"
      "Step 13: B5  F6\n"
      "Step 14: F7  B6\n"
      "Step 15: B6  F7\n"
      "Step 16:     B7\n"
      "Step 17: B7\n";
  const fixtures::CliResult printed = fixtures::run_simtrain({"schedule", "tiny-4gpu", "--grid"});
  EXPECT_EQ(printed.code, 0) << printed.err;
  EXPECT_EQ(printed.out, tiny_grid);
  EXPECT_EQ(printed.err, "");

  const fixtures::TemporaryDirectory dir("grid");
  const std::string path = (dir.path() / "grid.txt").string();
  const fixtures::CliResult written = fixtures::run_simtrain({"schedule", "tiny-4gpu", "--grid", "--out", path});
  EXPECT_EQ(written.code, 0) << written.err;
  EXPECT_EQ(written.out, "");
  EXPECT_EQ(fixtures::read_text(path), tiny_grid);
}

}  // namespace
