// --trace-ranks: which ranks a Chrome trace shows (sim/program/trace_ranks.hpp),
// how a representative is labelled, and what the trace reader does with a
// trace of some ranks only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "sim/base/input_error.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/trace.hpp"
#include "sim/program/trace_ranks.hpp"
#include "sim/program/trace_reader.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using nlohmann::json;
using testing::ElementsAre;
using testing::HasSubstr;

struct Step {
  Program program;
  Timeline timeline;
};

// TP 2 x PP 2 x DP 2 (ranks: tp fastest, then dp, then pp) with made-up
// times: each rank's tasks back to back, 1 ms each, ranks offset by 0.25 ms.
Step made_up_step(int tp = 2, int pp = 2, int dp = 2) {
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(tp, pp, dp, 8, "1f1b", 0, 8));
  Step step{build_program(s, build_workload(s)), {}};
  step.timeline.tasks.resize(step.program.tasks.size());
  for (int rank = 0; rank < step.program.world_size; ++rank) {
    double now = 0.25e-3 * rank;
    for (int id : step.program.rank_tasks(rank)) step.timeline.tasks[id] = {now, now + 1e-3}, now += 1e-3;
  }
  return step;
}

// Every data-parallel replica stood for by the one of dp 0, as a
// symmetry-reduced replay reports it.
void represent_by_first_replica(Step& step) {
  for (int rank = 0; rank < step.program.world_size; ++rank) {
    const RankCoord& c = step.program.coords[rank];
    int representative = 0;
    while (step.program.coords[representative].tp != c.tp || step.program.coords[representative].pp != c.pp ||
           step.program.coords[representative].dp != 0)
      ++representative;
    step.timeline.representative_of_rank.push_back(representative);
  }
}

std::string trace_text(const Step& step, const TraceRanks& ranks) {
  std::ostringstream out;
  write_chrome_trace(out, step.program, step.timeline, {}, ranks);
  return out.str();
}

// The trace's process names by pid, in file order.
std::vector<std::string> process_names(const json& trace) {
  std::vector<std::string> names;
  for (const json& event : trace["traceEvents"])
    if (event["name"] == "process_name")
      names.push_back(std::to_string(event["pid"].get<int>()) + ": " + event["args"]["name"].get<std::string>());
  return names;
}

// The pids of the trace's task events, each once, in file order.
std::vector<int> task_pids(const json& trace) {
  std::vector<int> pids;
  for (const json& event : trace["traceEvents"])
    if (event["ph"] == "X" && (pids.empty() || pids.back() != event["pid"].get<int>())) pids.push_back(event["pid"]);
  return pids;
}

std::string parse_error(const std::string& text) {
  try {
    parse_trace_ranks(text);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for '" << text << "'";
  return "";
}

// ---- the option ------------------------------------------------------------

TEST(TraceRanks, ParsesEveryMode) {
  EXPECT_EQ(parse_trace_ranks("representatives").mode, TraceRanks::Mode::representatives);
  EXPECT_EQ(parse_trace_ranks("all").mode, TraceRanks::Mode::all);
  const TraceRanks stages = parse_trace_ranks("stage:3,0,3");
  EXPECT_EQ(stages.mode, TraceRanks::Mode::stages);
  EXPECT_THAT(stages.values, ElementsAre(0, 3));
  const TraceRanks ranks = parse_trace_ranks("rank:17,1024");
  EXPECT_EQ(ranks.mode, TraceRanks::Mode::ranks);
  EXPECT_THAT(ranks.values, ElementsAre(17, 1024));
  EXPECT_EQ(TraceRanks{}.mode, TraceRanks::Mode::representatives);
}

TEST(TraceRanks, BadValuesNameTheOptionAndTheReason) {
  EXPECT_EQ(parse_error("some"),
            "simulate: --trace-ranks: expected all, representatives, stage:P[,P...] or rank:R[,R...], got 'some'");
  EXPECT_EQ(parse_error("stage:"),
            "simulate: --trace-ranks: expected a comma-separated list of pipeline rank numbers (0 or more), got ''");
  for (const std::string& item : {"", "-1", "x", "3.5", "99999999999"})
    EXPECT_EQ(parse_error("rank:1," + item),
              "simulate: --trace-ranks: expected a comma-separated list of rank numbers (0 or more), got '" + item + "'");
}

TEST(TraceRanks, RanksBeyondTheJobAreRefused) {
  const auto refusal = [](const std::string& text, int world_size, int pipeline_size) {
    try {
      check_trace_ranks(parse_trace_ranks(text), world_size, pipeline_size);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal("rank:3", 4, 2), "accepted");
  EXPECT_EQ(refusal("rank:0,4", 4, 2), "simulate: --trace-ranks: rank 4 does not exist: the job has 4 ranks (0 to 3)");
  EXPECT_EQ(refusal("stage:2", 4, 2),
            "simulate: --trace-ranks: pipeline rank 2 does not exist: the job has 2 pipeline ranks (0 to 1)");
}

// ---- the trace -------------------------------------------------------------

// Where every rank ran its own tasks, the default shows every rank, as `all`
// does, and says nothing of a selection.
TEST(TraceRanks, RepresentativesOfAFullReplayAreEveryRank) {
  const Step step = made_up_step();
  const std::string trace = trace_text(step, {});
  EXPECT_EQ(trace, trace_text(step, {TraceRanks::Mode::all, {}}));
  EXPECT_THAT(task_pids(json::parse(trace)), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_FALSE(json::parse(trace)["otherData"].contains("shown_ranks"));
  std::istringstream in(trace);
  EXPECT_EQ(read_chrome_trace(in, "t.json").program.world_size, 8);
}

TEST(TraceRanks, RepresentativesAreLabelledWithTheRanksTheyStandFor) {
  Step step = made_up_step();
  represent_by_first_replica(step);  // ranks 2, 3, 6, 7 (dp 1) stood for by 0, 1, 4, 5
  const json trace = json::parse(trace_text(step, {}));
  EXPECT_THAT(process_names(trace), ElementsAre("0: rank 0 (tp 0, pp 0, dp 0) stands for 2 ranks: 0, 2",
                                                "1: rank 1 (tp 1, pp 0, dp 0) stands for 2 ranks: 1, 3",
                                                "4: rank 4 (tp 0, pp 1, dp 0) stands for 2 ranks: 4, 6",
                                                "5: rank 5 (tp 1, pp 1, dp 0) stands for 2 ranks: 5, 7"));
  EXPECT_THAT(task_pids(trace), ElementsAre(0, 1, 4, 5));
  EXPECT_EQ(trace["otherData"]["shown_ranks"], json({0, 1, 4, 5}));
}

TEST(TraceRanks, LargeClassesListAFewRanksAndTheCount) {
  Step step = made_up_step(1, 1, 8);
  represent_by_first_replica(step);
  EXPECT_THAT(process_names(json::parse(trace_text(step, {}))),
              ElementsAre("0: rank 0 (tp 0, pp 0, dp 0) stands for 8 ranks: 0, 1, 2, ..."));
}

// `all` shows the ranks a representative stands for too, with its times.
TEST(TraceRanks, AllShowsEveryRankWithItsRepresentativesTimes) {
  Step step = made_up_step();
  represent_by_first_replica(step);
  const RecordedStep read = [&] {
    std::istringstream in(trace_text(step, {TraceRanks::Mode::all, {}}));
    return read_chrome_trace(in, "t.json");
  }();
  ASSERT_EQ(read.program.world_size, 8);
  const RankTaskIds rank2 = read.program.rank_tasks(2);
  ASSERT_EQ(rank2.size(), step.program.rank_tasks(0).size());
  for (size_t i = 0; i < rank2.size(); ++i) {
    EXPECT_EQ(read.program.tasks[rank2[i]].id, step.program.rank_tasks(2)[i]);  // rank 2's own tasks ...
    const TaskTiming& rank0 = read.timeline.tasks[read.program.rank_tasks(0)[i]];  // ... at rank 0's times
    EXPECT_EQ(read.timeline.tasks[rank2[i]].start, rank0.start);
    EXPECT_EQ(read.timeline.tasks[rank2[i]].end, rank0.end);
  }
}

TEST(TraceRanks, StagesAndRanksShowThoseRanks) {
  const Step step = made_up_step();
  EXPECT_THAT(task_pids(json::parse(trace_text(step, parse_trace_ranks("stage:1")))), ElementsAre(4, 5, 6, 7));
  const json ranks = json::parse(trace_text(step, parse_trace_ranks("rank:6,3")));
  EXPECT_THAT(task_pids(ranks), ElementsAre(3, 6));
  EXPECT_THAT(process_names(ranks), ElementsAre("3: rank 3 (tp 1, pp 0, dp 1)", "6: rank 6 (tp 0, pp 1, dp 1)"));
  EXPECT_EQ(ranks["otherData"]["shown_ranks"], json({3, 6}));
}

// `compare`, the GUI and the report's splits need every rank's tasks: a trace
// of some is refused, saying how to write a whole one.
TEST(TraceRanks, TheReaderRefusesATraceOfSomeRanks) {
  std::istringstream in(trace_text(made_up_step(), parse_trace_ranks("stage:0")));
  try {
    read_chrome_trace(in, "t.json");
    ADD_FAILURE() << "read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.json: otherData.shown_ranks: the trace shows 4 ranks of the job only (simtrain simulate "
              "--trace-ranks); reading a trace back needs every rank: write it with --trace-ranks all");
  }
}

// ---- the command line --------------------------------------------------------

class TraceRanksCli : public testing::Test {
protected:
  std::string path(const std::string& name) const { return (temporary_.path() / name).string(); }
  fixtures::TemporaryDirectory temporary_{"trace-ranks"};
};

TEST_F(TraceRanksCli, WritesTheChosenRanks) {
  const fixtures::CliResult r =
      fixtures::run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--trace", path("t.json"), "--trace-ranks", "stage:1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(task_pids(fixtures::read_json(path("t.json"))), ElementsAre(2, 3));  // tiny-4gpu: TP 2 x PP 2
}

TEST_F(TraceRanksCli, BadValuesExitWithTheOptionNamedBeforeSimulating) {
  const auto expect_refused = [&](const std::vector<std::string>& flags, const std::string& message) {
    std::vector<std::string> args = {"simulate", "tiny-4gpu", "--quiet"};
    args.insert(args.end(), flags.begin(), flags.end());
    const fixtures::CliResult r = fixtures::run_simtrain(args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, message);
    EXPECT_EQ(r.out, "");  // no report: refused before simulating
  };
  expect_refused({"--trace", path("t.json"), "--trace-ranks", "stages:1"},
                 "simtrain: simulate: --trace-ranks: expected all, representatives, stage:P[,P...] or rank:R[,R...], "
                 "got 'stages:1'\n");
  expect_refused({"--trace", path("t.json"), "--trace-ranks", "rank:4"},
                 "simtrain: simulate: --trace-ranks: rank 4 does not exist: the job has 4 ranks (0 to 3)\n");
  expect_refused({"--trace-ranks", "all"}, "simtrain: --trace-ranks requires --trace\n");
}

}  // namespace
}  // namespace simtrain
