// The task table answers which rank holds a task, and where on its list,
// from the lists' bounds alone: without reading the task, which a rank
// reading another's stored list would translate (sim/program/task_table.hpp).
#include <gtest/gtest.h>

#include "sim/program/program_builder.hpp"
#include "sim/program/task_table.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// Every task of every list: rank_of and position_in_rank say where it is listed, as the (translated) task says.
void expect_places_of_listed_tasks(const TaskTable& table) {
  size_t listed = 0;
  for (int rank = 0; rank < table.rank_lists(); ++rank) {
    const RankTaskIds ids = table.rank_tasks(rank);
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_EQ(table.rank_of(ids[i]), rank) << "task " << ids[i];
      ASSERT_EQ(table.position_in_rank(ids[i]), static_cast<int>(i)) << "task " << ids[i];
      ASSERT_EQ(table[ids[i]].rank, rank) << "task " << ids[i];
    }
    listed += ids.size();
  }
  EXPECT_EQ(listed, table.size());
}

void add_stored_rank(TaskTable& table, int rank, int tasks) {
  for (int i = 0; i < tasks; ++i) table.add(Task{.rank = rank});
  table.end_rank();
}

}  // namespace

TEST(TaskTable, TranslatedRanksAreFoundFromTheirListsBounds) {
  // Lists longer than a block of ids and shorter, an empty one, and ranks reading each.
  TaskTable table;
  add_stored_rank(table, 0, 700);
  table.add_translated_rank(0);
  add_stored_rank(table, 2, 0);
  add_stored_rank(table, 3, 3);
  for (int i = 0; i < 200; ++i) table.add_translated_rank(3);
  table.add_translated_rank(0);
  ASSERT_EQ(table.stored_tasks(), 703u);
  ASSERT_EQ(table.size(), 2 * 700 + 3 + 200 * 3 + 700u);
  expect_places_of_listed_tasks(table);
}

TEST(TaskTable, PositionsFollowTheIssueOrder) {
  TaskTable table;
  for (int id = 0; id < 5; ++id) table.add(Task{.rank = id % 2});
  table.set_rank_tasks({{4, 0, 2}, {3, 1}});
  expect_places_of_listed_tasks(table);
  EXPECT_EQ(table.position_in_rank(4), 0);
  EXPECT_EQ(table.position_in_rank(1), 1);
}

TEST(TaskTable, ABuiltProgramsTasksAreFoundWhereTheyAreListed) {
  // TP 2 x PP 2 x DP 2: six of the eight ranks read the two stored lists translated.
  const Scenario scenario =
      fixtures::scenario_from(fixtures::scenario_json(2, 2, 2, 8, "interleaved_1f1b", 2, 4));
  const Program program = build_program(scenario, build_workload(scenario));
  ASSERT_EQ(program.tasks.stored_tasks(), program.rank_tasks(0).size() + program.rank_tasks(4).size());
  expect_places_of_listed_tasks(program.tasks);
}
