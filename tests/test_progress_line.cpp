// What a long command shows while it works (issue 39, item 8): the texts of
// the progress line, from counts and seconds; the line itself (rewritten in
// place, fitted to the terminal, cleared); and the stages a simulation
// reports before its replay's tasks run, so that none of its seconds is silent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "progress_line.hpp"
#include "sim/base/text_format.hpp"
#include "sim/engine/simulate.hpp"

namespace simtrain {
namespace {

using testing::ElementsAre;

TEST(ProgressText, WallClockTimesReadAsPeopleSayThem) {
  EXPECT_EQ(wall_clock_text(0), "0 s");
  EXPECT_EQ(wall_clock_text(41.6), "42 s");
  EXPECT_EQ(wall_clock_text(72), "1m12s");
  EXPECT_EQ(wall_clock_text(7500), "2h05m");
}

TEST(ProgressText, TheRestAtThePaceSoFarAndTheTimeElapsed) {
  // A quarter done in 10 s: 30 s to go.
  EXPECT_EQ(left_and_elapsed(12, 0.25, 10), ", about 30 s left, 12 s elapsed");
  // Nothing done yet, or all: no estimate.
  EXPECT_EQ(left_and_elapsed(3, 0, 0), ", 3 s elapsed");
  EXPECT_EQ(left_and_elapsed(3, 1, 3), ", 3 s elapsed");
}

TEST(ProgressText, ReplayLineHasTasksWallTimeEtaAndSimulatedTime) {
  ReplayProgress p;
  p.simulated_seconds = 5.8123;
  p.tasks_done = 81'585;
  p.tasks_total = 326'340;
  EXPECT_EQ(replay_progress_text(p, 14, 10), "simulating: 81,585/326,340 tasks, about 30 s left, 14 s elapsed, 5.81 s simulated");
  p.replay = "sensitivity 1/2 (compute +10 %)";
  EXPECT_EQ(replay_progress_text(p, 100, 10),
            "sensitivity 1/2 (compute +10 %): 81,585/326,340 tasks, about 30 s left, 1m40s elapsed, 5.81 s simulated");
}

TEST(ProgressText, PhaseTrainAndSearchLines) {
  EXPECT_EQ(phase_text("setting up: replica classes"), "simulating: setting up: replica classes");
  TrainProgress train;
  train.runs = 10;
  train.runs_done = 2;
  train.simulated_seconds = 3.5 * 86400;
  EXPECT_EQ(train_progress_text(train, 20, 8), "training: 2/10 runs done, about 32 s left, 20 s elapsed, run 3 at 3.5 simulated days");
  const SearchProgress search{120, 220, 2876};
  EXPECT_EQ(search_progress_text(search, 60),
            "search [#######.............] 120/340 simulated, at most 1m50s left, 1m00s elapsed, 2,876 pruned");
  // A quarter of the ranks in 3 s of writing: 9 s to go.
  EXPECT_EQ(ranks_written_text("schedule", 768, 3072, 5, 3), "schedule: 768/3,072 ranks written, about 9 s left, 5 s elapsed");
}

TEST(ProgressText, FittedToTheTerminalByItsLastParts) {
  const std::string line = "simulating: 81,585/326,340 tasks, about 30 s left, 14 s elapsed, 5.81 s simulated";
  EXPECT_EQ(fit_to_width(line, 200), line);
  EXPECT_EQ(fit_to_width(line, 79), "simulating: 81,585/326,340 tasks, about 30 s left, 14 s elapsed");
  EXPECT_EQ(fit_to_width(line, 40), "simulating: 81,585/326,340 tasks");
  EXPECT_EQ(fit_to_width("no commas at all here", 9), "no commas");
}

TEST(ProgressLine, RewritesInPlaceAndClears) {
  std::ostringstream err;
  {
    ProgressLine line(err, true);
    line.show("simulating: building the Program");
    line.show("simulating: a");
  }  // cleared when it goes
  EXPECT_EQ(err.str(), "\rsimulating: building the Program"
                       "\rsimulating: a" + std::string(19, ' ') +  // what is left of the longer line, blanked
                       "\r" + std::string(13, ' ') + "\r");
}

TEST(ProgressLine, ShowsNothingWhereNotWanted) {
  std::ostringstream err;
  {
    ProgressLine line(err, false);
    line.show("simulating: building the Program");
  }
  EXPECT_EQ(err.str(), "");
}

// Every stage of a simulation says it begins, in order, before the replay's tasks are counted.
TEST(SimulationPhases, AreReportedBeforeTheReplayAndDuringTheSensitivityReplays) {
  std::vector<std::string> phases;
  size_t counted_before_replaying = 0, counted = 0;
  ReplayOptions options;
  options.on_phase = [&](const std::string& phase) { phases.push_back(phase); };
  options.on_progress = [&](const ReplayProgress&) {
    ++counted;
    if (phases.empty() || phases.back().find("replaying the step") == std::string::npos) ++counted_before_replaying;
  };
  simulate(load_scenario("tiny-4gpu"), options, SensitivityReplays::always);
  const std::vector<std::string> replay = {"setting up the replay", "setting up: lanes", "setting up: flows",
                                           "setting up: replica classes", "setting up: SimGrid platform",
                                           "setting up: actors", "replaying the step"};
  std::vector<std::string> expected = {"building the workload", "building the Program", "building the fabric",
                                       "timing the work"};
  expected.insert(expected.end(), replay.begin(), replay.end());
  expected.push_back("writing the report");
  for (const std::string& name : replay) expected.push_back("sensitivity 1/2 (compute +10 %): " + name);
  expected.push_back("sensitivity 2/2 (network 2x slower): building the fabric");
  for (const std::string& name : replay) expected.push_back("sensitivity 2/2 (network 2x slower): " + name);
  EXPECT_EQ(phases, expected);
  EXPECT_EQ(counted_before_replaying, 0u);
}

}  // namespace
}  // namespace simtrain
