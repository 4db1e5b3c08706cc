// The replay's state by task is sized to the tasks its actors run: they are
// numbered densely, simulated rank after rank, each list in order
// (sim/engine/simulated_tasks.hpp).
#include <algorithm>

#include <gtest/gtest.h>

#include "sim/engine/simulated_tasks.hpp"
#include "sim/program/program_builder.hpp"
#include "test_support.hpp"

using namespace simtrain;

TEST(SimulatedTasks, NumberTheSimulatedRanksTasksDenselyInListOrder) {
  // TP 2 x PP 2 x DP 2: rank 2 reads rank 0's stored list translated, rank 4 its own.
  const Scenario scenario = fixtures::scenario_from(fixtures::scenario_json(2, 2, 2, 8, "1f1b"));
  const Program program = build_program(scenario, build_workload(scenario));
  const std::vector<int> simulated_ranks = {2, 4};
  const SimulatedTasks tasks(program, [&](int rank) { return std::ranges::count(simulated_ranks, rank) > 0; });
  ASSERT_EQ(tasks.size(), program.rank_tasks(2).size() + program.rank_tasks(4).size());
  size_t number = 0;
  BySimulatedTask<int> ids(tasks, -1);
  for (int rank : simulated_ranks)
    for (int id : program.rank_tasks(rank)) {
      ASSERT_TRUE(tasks.contains(id));
      EXPECT_EQ(tasks(id), number++);
      ids[id] = id;
    }
  for (int id : program.rank_tasks(1)) EXPECT_FALSE(tasks.contains(id));
  std::vector<int> listed;
  for (int rank : simulated_ranks) listed.insert(listed.end(), program.rank_tasks(rank).begin(), program.rank_tasks(rank).end());
  EXPECT_EQ(ids.values(), listed);
}
