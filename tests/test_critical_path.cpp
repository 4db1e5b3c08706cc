// The critical path two ways (sim/program/critical_path.hpp): predicted from
// task durations, and walked back over the timeline a replay ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sim/engine/simulate.hpp"
#include "sim/program/critical_path.hpp"
#include "sim/program/program_builder.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

// Dependencies, then the task before on the same stream of the rank; a RECV has no stream predecessor.
TEST(TaskPredecessors, AreTheDependenciesThenTheTaskBeforeOnTheStream) {
  const Program program = simulate(load_scenario("tiny-4gpu")).program;
  const std::vector<std::vector<int>> before = task_predecessors(program);
  for (int rank = 0; rank < program.world_size; ++rank) {
    std::map<Stream, int> previous;  // the last task on each stream
    for (int id : program.rank_tasks(rank)) {
      const Task& t = program.tasks[id];
      const TaskDeps deps = program.deps(t);
      std::vector<int> expected(deps.begin(), deps.end());
      if (t.kind != TaskKind::RECV || is_posted_in_order(t)) {  // a passive (eager) RECV is on no stream's order
        if (const auto last = previous.find(t.stream); last != previous.end()) expected.push_back(last->second);
        previous[t.stream] = id;
      }
      EXPECT_EQ(before[id], expected) << task_name(program, t);
    }
  }
}

// Each task of the chain is the predecessor that ended last of the next one; the last ends the step.
TEST(CriticalPathOfARun, RunsBackFromTheLastTaskThroughThePredecessorThatEndedLast) {
  const Simulation sim = simulate(load_scenario("tiny-4gpu"));
  const CriticalPath path = critical_path(sim.program, sim.timeline);
  ASSERT_GT(path.tasks.size(), 2u);
  EXPECT_EQ(path.seconds, sim.timeline.step_seconds);
  EXPECT_EQ(sim.timeline.tasks[path.tasks.back()].end, sim.timeline.step_seconds);
  const std::vector<std::vector<int>> before = task_predecessors(sim.program);
  auto end_of = [&](int id) { return sim.timeline.tasks[id].end; };
  for (size_t i = 0; i < path.tasks.size(); ++i) {
    const std::vector<int>& candidates = before[path.tasks[i]];
    if (i == 0) {
      EXPECT_TRUE(candidates.empty()) << task_name(sim.program, sim.program.tasks[path.tasks[0]]);
      continue;
    }
    const auto latest = std::max_element(candidates.begin(), candidates.end(),
                                         [&](int a, int b) { return end_of(a) < end_of(b); });
    EXPECT_EQ(*latest, path.tasks[i - 1]);
  }
}

TEST(CriticalPathOfARun, LeavesOutTasksThatNeverRan) {
  Simulation sim = simulate(load_scenario("tiny-4gpu"));
  const int last = critical_path(sim.program, sim.timeline).tasks.back();
  sim.timeline.tasks[last] = {};  // start -1: never ran
  const std::vector<int> tasks = critical_path(sim.program, sim.timeline).tasks;
  EXPECT_FALSE(tasks.empty());
  EXPECT_EQ(std::count(tasks.begin(), tasks.end(), last), 0);
}

// With free communication and no collectives the replay runs the Program as
// its dependencies allow, so both ways find the same chain.
TEST(CriticalPathOfARun, IsThePredictedOneWhereTheReplayIsTheDependencyGraph) {
  nlohmann::json doc = fixtures::scenario_json(1, 4, 1, 8, "1f1b", 0, 8);
  doc["model"]["tie_word_embeddings"] = false;  // no all-reduce between the first and the last stage
  // Eager: a paired transfer also waits for its receive to be posted, which no dependency says.
  doc["parallelism"]["p2p_communication"] = "eager";
  const Scenario s = fixtures::scenario_from(doc);
  const Program program = build_program(s, build_workload(s));
  const std::vector<double> work_seconds = work_durations(program, RooflineModel(s.cluster.gpu), s.training.dtype);
  ReplayOptions options;
  options.free_communication = true;
  const Timeline timeline = replay(program, Fabric(s.cluster.topology, 4), work_seconds, options);
  std::vector<double> task_seconds;
  for (const Task& t : program.tasks) task_seconds.push_back(t.work >= 0 ? work_seconds[t.work] : 0.0);

  const CriticalPath predicted = critical_path(program, task_seconds);
  const CriticalPath ran = critical_path(program, timeline);
  EXPECT_NEAR(ran.seconds / predicted.seconds, 1.0, 1e-9);
  EXPECT_EQ(ran.tasks, predicted.tasks);
}

}  // namespace
}  // namespace simtrain
