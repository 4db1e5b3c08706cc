// Where two ranks' task lists part, as the replay reports TP ranks out of step.
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/engine/replay.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/task_list_difference.hpp"
#include "test_support.hpp"

using namespace simtrain;
using testing::HasSubstr;

namespace {

// TP 2 x PP 2: ranks 0 and 1 are the TP pair of the first stage.
Program tp_pair_program() {
  const Scenario scenario = fixtures::scenario_from(fixtures::scenario_json(2, 2, 1, 4, "1f1b", 0, 2));
  return build_program(scenario, build_workload(scenario));
}

TEST(TaskListDifference, NoneBetweenTensorParallelPeers) {
  const Program program = tp_pair_program();
  EXPECT_EQ(task_list_difference(program, 0, 1), "");
  EXPECT_EQ(task_list_difference(program, 1, 0), "");
}

TEST(TaskListDifference, ShowsBothListsAroundTheFirstSwap) {
  Program program = tp_pair_program();
  fixtures::edit_rank_tasks(program, 1, [](std::vector<int>& ids) { std::swap(ids[4], ids[5]); });
  EXPECT_EQ(task_list_difference(program, 0, 1),
            "rank 0 (14 tasks) and rank 1 (14 tasks) first differ at position 4:\n"
            "     rank 0                           rank 1\n"
            "  ...\n"
            "  1  s0 ALLREDUCE_F mb0 tp0 512KiB x5 s0 ALLREDUCE_F mb0 tp0 512KiB x5\n"
            "  2  s0 SEND_F mb0 ->s1               s0 SEND_F mb0 ->s1\n"
            "  3  s0 F mb1                         s0 F mb1\n"
            "> 4  s0 ALLREDUCE_F mb1 tp0 512KiB x5 s0 SEND_F mb1 ->s1\n"
            "  5  s0 SEND_F mb1 ->s1               s0 ALLREDUCE_F mb1 tp0 512KiB x5\n"
            "  6  s0 RECV_B mb0 <-s1               s0 RECV_B mb0 <-s1\n"
            "  7  s0 B mb0                         s0 B mb0\n"
            "  ...\n");
}

TEST(TaskListDifference, ShowsWhereTheShorterListEnds) {
  Program program = tp_pair_program();
  fixtures::edit_rank_tasks(program, 1, [](std::vector<int>& ids) { ids.pop_back(); });
  EXPECT_EQ(task_list_difference(program, 1, 0),
            "rank 1 (13 tasks) and rank 0 (14 tasks) first differ at position 13:\n"
            "      rank 1                           rank 0\n"
            "  ...\n"
            "  10  s0 B mb1                         s0 B mb1\n"
            "  11  s0 ALLREDUCE_B mb1 tp0 512KiB x4 s0 ALLREDUCE_B mb1 tp0 512KiB x4\n"
            "  12  ALLREDUCE emb3 4MiB              ALLREDUCE emb2 4MiB\n"
            "> 13  (end)                            OPT\n");
}

// The replay runs TP ranks in lockstep and refuses a Program whose TP ranks
// part; its simulation process says where on standard error.
TEST(TaskListDifference, TheReplayShowsIt) {
  const Scenario scenario = fixtures::scenario_from(fixtures::scenario_json(2, 2, 1, 4, "1f1b", 0, 2));
  Program program = build_program(scenario, build_workload(scenario));
  fixtures::edit_rank_tasks(program, 1, [](std::vector<int>& ids) { std::swap(ids[4], ids[5]); });
  testing::internal::CaptureStderr();
  EXPECT_THROW(replay(program, Fabric(scenario.cluster.topology, program.world_size),
                      std::vector<double>(program.works.size(), 1e-3), ReplayOptions{}),
               std::runtime_error);
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr("TP ranks with different task lists: " + task_list_difference(program, 0, 1)));
}

}  // namespace
