#pragma once
// Laws every generated Program obeys, checked by tests/test_program.cpp over
// its grid of layouts and by the suites of other features (expert and
// context parallelism) on their own Programs, and the replay's.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/simulate.hpp"
#include "sim/program/program.hpp"

namespace simtrain::fixtures {

// Each RECV waits for one SEND, of its size, micro-batch and pair of ranks;
// each SEND is received once; bytes sent between two ranks = bytes received.
inline void expect_every_send_pairs_with_one_receive_of_the_same_size(const Program& p) {
  std::map<int, int> receives_of_send;
  std::map<std::pair<int, int>, double> sent, received;
  for (const Task& t : p.tasks) {
    if (t.kind == TaskKind::SEND) sent[{t.rank, t.peer}] += t.bytes;
    if (t.kind != TaskKind::RECV) continue;
    ASSERT_EQ(p.deps(t).size(), 1u) << task_name(p, t);
    const Task& send = p.tasks[p.deps(t)[0]];
    ASSERT_EQ(send.kind, TaskKind::SEND);
    EXPECT_EQ(send.peer, t.rank);
    EXPECT_EQ(t.peer, send.rank);
    EXPECT_EQ(send.microbatch, t.microbatch);
    EXPECT_EQ(send.bytes, t.bytes);
    receives_of_send[send.id] += 1;
    received[{send.rank, t.rank}] += t.bytes;
  }
  for (const Task& t : p.tasks)
    if (t.kind == TaskKind::SEND) EXPECT_EQ(receives_of_send[t.id], 1) << task_name(p, t);
  EXPECT_EQ(sent, received);
}

// The members of each group issue its collectives (kind, size, count) in the same order, and at least one.
inline void expect_group_members_issue_the_same_collectives(const Program& p) {
  for (const Group& g : p.groups) {
    std::vector<std::tuple<TaskKind, double, int>> first;
    for (size_t i = 0; i < g.ranks.size(); ++i) {
      std::vector<std::tuple<TaskKind, double, int>> sequence;
      for (int id : p.rank_tasks(g.ranks[i]))
        if (p.tasks[id].group == g.id) sequence.emplace_back(p.tasks[id].kind, p.tasks[id].bytes, p.tasks[id].count);
      if (i == 0) first = sequence;
      EXPECT_EQ(sequence, first) << g.name;
    }
    EXPECT_FALSE(first.empty()) << g.name << " has no collective";
  }
}

// Every task is listed once, by its own rank.
inline void expect_every_task_listed_once_by_its_rank(const Program& p) {
  size_t listed = 0;
  for (int rank = 0; rank < p.world_size; ++rank)
    for (int id : p.rank_tasks(rank)) {
      EXPECT_EQ(p.tasks[id].rank, rank);
      ++listed;
    }
  EXPECT_EQ(listed, p.tasks.size());
}

// The compute tasks add up to the step's FLOPs, recompute included.
inline void expect_compute_adds_up_to_the_steps_flops(const Program& p, const Workload& w) {
  double flops = 0;
  for (const Task& t : p.tasks)
    if (t.work >= 0 && t.kind != TaskKind::OPT) flops += p.works[t.work].flops();
  EXPECT_NEAR(flops / w.hardware_flops_per_step, 1.0, 1e-9);
}

// All of the above.
inline void expect_program_holds_together(const Program& p, const Workload& w) {
  expect_every_task_listed_once_by_its_rank(p);
  expect_every_send_pairs_with_one_receive_of_the_same_size(p);
  expect_group_members_issue_the_same_collectives(p);
  expect_compute_adds_up_to_the_steps_flops(p, w);
}

// Every rank's step splits into compute, exposed communication and idle time, once each.
inline void expect_every_ranks_split_adds_up_to_the_step(const StepReport& r) {
  for (const TimeSplit& t : r.ranks)
    EXPECT_NEAR(t.compute_seconds + t.exposed_seconds() + t.idle_seconds, r.step_seconds, 1e-9 * r.step_seconds);
}

// One replica per class of equivalent ones replays as every one does, and
// free communication makes the step shorter.
inline void expect_replica_classes_replay_as_the_full_replay(const Scenario& s) {
  const double classes = simulate(s).report.step_seconds;
  ReplayOptions full;
  full.full_replay = true;
  EXPECT_NEAR(simulate(s, full).report.step_seconds / classes, 1, 1e-9);
  ReplayOptions free;
  free.free_communication = true;
  EXPECT_LT(simulate(s, free).report.step_seconds, classes);
}

}  // namespace simtrain::fixtures
