#include "sim/program/pipeline_schedule.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace simtrain {
namespace {

using Schedule = std::vector<std::vector<PipelineAction>>;

constexpr int kStageCounts[] = {1, 2, 3, 4, 8};
constexpr int kMaxMicrobatches = 17;

std::vector<std::string> names(const std::vector<PipelineAction>& actions) {
  std::vector<std::string> result;
  for (const PipelineAction& action : actions) result.push_back(to_string(action));
  return result;
}

std::string case_name(int p, int m, int v) {
  return "p=" + std::to_string(p) + " m=" + std::to_string(m) + " v=" + std::to_string(v);
}

// Every (p, m, v) the schedule accepts within the test grid.
std::vector<std::tuple<int, int, int>> grid(ScheduleKind kind) {
  std::vector<std::tuple<int, int, int>> cases;
  const int max_chunks = kind == ScheduleKind::interleaved_1f1b ? 4 : 1;
  for (int p : kStageCounts) {
    for (int m = 1; m <= kMaxMicrobatches; ++m) {
      for (int v = 1; v <= max_chunks; ++v) {
        if (kind == ScheduleKind::interleaved_1f1b && m % p != 0) continue;
        cases.emplace_back(p, m, v);
      }
    }
  }
  return cases;
}

// Durations of one action on one chunk.
struct ChunkTimes {
  double forward_s = 1;
  double backward_s = 1;
  double weight_grad_s = 1;

  double of(TaskKind type) const {
    switch (type) {
      case TaskKind::F: return forward_s;
      case TaskKind::B: return backward_s;
      case TaskKind::W: return weight_grad_s;
    }
    return 0;
  }
};

struct Timeline {
  bool deadlocked = false;
  double makespan_s = 0;
  std::vector<int> peak_in_flight;  // per rank: chunk micro-batches with F done, activations not yet freed
};

// Runs each rank's list in order, every action as soon as the rank is free
// and its inputs exist; communication is free. Model stage k = chunk * p + rank.
// F(k, i) needs F(k-1, i); B(k, i) needs F(k, i) and B(k+1, i); W(k, i) needs B(k, i).
class Evaluator {
public:
  Evaluator(const Schedule& schedule, int v, ChunkTimes times)
      : schedule_(schedule), p_(static_cast<int>(schedule.size())), v_(v), times_(times) {}

  Timeline run() {
    Timeline timeline;
    std::vector<size_t> next(p_, 0);
    std::vector<double> rank_free_s(p_, 0);
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (int rank = 0; rank < p_; ++rank) {
        for (; next[rank] < schedule_[rank].size(); ++next[rank], progressed = true) {
          const PipelineAction& action = schedule_[rank][next[rank]];
          const std::optional<double> inputs_ready_s = inputs_ready(action, rank);
          if (!inputs_ready_s) break;
          const double start_s = std::max(rank_free_s[rank], *inputs_ready_s);
          rank_free_s[rank] = start_s + times_.of(action.kind);
          finish_s_[{action.kind, stage(action, rank), action.microbatch}] = rank_free_s[rank];
          timeline.makespan_s = std::max(timeline.makespan_s, rank_free_s[rank]);
        }
      }
    }
    for (int rank = 0; rank < p_; ++rank) {
      timeline.deadlocked |= next[rank] < schedule_[rank].size();
      timeline.peak_in_flight.push_back(peak_in_flight(schedule_[rank]));
    }
    return timeline;
  }

private:
  int stage(const PipelineAction& action, int rank) const { return action.chunk * p_ + rank; }

  std::optional<double> finish_s(TaskKind type, int stage, int microbatch) const {
    const auto it = finish_s_.find({type, stage, microbatch});
    if (it == finish_s_.end()) return std::nullopt;
    return it->second;
  }

  // Latest finish among the action's inputs; nullopt while one is missing.
  std::optional<double> inputs_ready(const PipelineAction& action, int rank) const {
    const int k = stage(action, rank);
    const int i = action.microbatch;
    std::vector<std::optional<double>> inputs;
    switch (action.kind) {
      case TaskKind::F:
        if (k > 0) inputs.push_back(finish_s(TaskKind::F, k - 1, i));
        break;
      case TaskKind::B:
        inputs.push_back(finish_s(TaskKind::F, k, i));
        if (k < p_ * v_ - 1) inputs.push_back(finish_s(TaskKind::B, k + 1, i));
        break;
      case TaskKind::W:
        inputs.push_back(finish_s(TaskKind::B, k, i));
        break;
    }
    double ready_s = 0;
    for (const std::optional<double>& input : inputs) {
      if (!input) return std::nullopt;
      ready_s = std::max(ready_s, *input);
    }
    return ready_s;
  }

  // Activations are freed by W when the schedule splits the backward, else by B.
  static int peak_in_flight(const std::vector<PipelineAction>& actions) {
    const bool split = std::any_of(actions.begin(), actions.end(),
                                   [](const PipelineAction& a) { return a.kind == TaskKind::W; });
    const TaskKind frees = split ? TaskKind::W : TaskKind::B;
    int in_flight = 0;
    int peak = 0;
    for (const PipelineAction& action : actions) {
      if (action.kind == TaskKind::F) peak = std::max(peak, ++in_flight);
      if (action.kind == frees) --in_flight;
    }
    return peak;
  }

  const Schedule& schedule_;
  int p_;
  int v_;
  ChunkTimes times_;
  std::map<std::tuple<TaskKind, int, int>, double> finish_s_;
};

Timeline evaluate(const Schedule& schedule, int v, ChunkTimes times) {
  return Evaluator(schedule, v, times).run();
}

TEST(PipelineAction, ToString) {
  EXPECT_EQ(to_string(PipelineAction{TaskKind::F, 0, 3}), "F3");
  EXPECT_EQ(to_string(PipelineAction{TaskKind::B, 1, 0}), "B0c1");
  EXPECT_EQ(to_string(PipelineAction{TaskKind::W, 0, 2}), "W2");
  EXPECT_EQ(to_string(PipelineAction{TaskKind::F, 3, 12}), "F12c3");
}

TEST(PipelineSchedule, GpipeSmallCase) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::gpipe, 2, 3, 1);
  ASSERT_EQ(schedule.size(), 2u);
  const std::vector<std::string> expected = {"F0", "F1", "F2", "B0", "B1", "B2"};
  EXPECT_EQ(names(schedule[0]), expected);
  EXPECT_EQ(names(schedule[1]), expected);
}

// Narayanan et al. 2021, Figure 4 (top): 4 stages, 8 micro-batches.
TEST(PipelineSchedule, OneFOneBSmallCase) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::one_f_one_b, 4, 8, 1);
  ASSERT_EQ(schedule.size(), 4u);
  EXPECT_EQ(names(schedule[0]),
            (std::vector<std::string>{"F0", "F1", "F2", "F3", "B0", "F4", "B1", "F5", "B2", "F6",
                                      "B3", "F7", "B4", "B5", "B6", "B7"}));
  EXPECT_EQ(names(schedule[2]),
            (std::vector<std::string>{"F0", "F1", "B0", "F2", "B1", "F3", "B2", "F4", "B3", "F5",
                                      "B4", "F6", "B5", "F7", "B6", "B7"}));
  EXPECT_EQ(names(schedule[3]),
            (std::vector<std::string>{"F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3", "F4", "B4",
                                      "F5", "B5", "F6", "B6", "F7", "B7"}));
}

// Fewer micro-batches than stages: warm-up is cut at m.
TEST(PipelineSchedule, OneFOneBFewMicrobatches) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::one_f_one_b, 4, 2, 1);
  EXPECT_EQ(names(schedule[0]), (std::vector<std::string>{"F0", "F1", "B0", "B1"}));
  EXPECT_EQ(names(schedule[2]), (std::vector<std::string>{"F0", "F1", "B0", "B1"}));
  EXPECT_EQ(names(schedule[3]), (std::vector<std::string>{"F0", "B0", "F1", "B1"}));
}

// Narayanan et al. 2021, Figure 4 (bottom): 4 stages, 8 micro-batches, 2
// chunks; device 1 warms up with 2 * 3 + 4 = 10 forwards, device 4 with 4.
TEST(PipelineSchedule, InterleavedSmallCase) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::interleaved_1f1b, 4, 8, 2);
  ASSERT_EQ(schedule.size(), 4u);
  EXPECT_EQ(names(schedule[0]),
            (std::vector<std::string>{
                "F0",   "F1",   "F2",   "F3",   "F0c1", "F1c1", "F2c1", "F3c1",
                "F4",   "F5",   "F6",   "B0c1", "F7",   "B1c1", "F4c1", "B2c1",
                "F5c1", "B3c1", "F6c1", "B0",   "F7c1", "B1",   "B2",   "B3",
                "B4c1", "B5c1", "B6c1", "B7c1", "B4",   "B5",   "B6",   "B7"}));
  EXPECT_EQ(names(schedule[3]),
            (std::vector<std::string>{
                "F0",   "F1",   "F2",   "F3",   "F0c1", "B0c1", "F1c1", "B1c1",
                "F2c1", "B2c1", "F3c1", "B3c1", "F4",   "B0",   "F5",   "B1",
                "F6",   "B2",   "F7",   "B3",   "F4c1", "B4c1", "F5c1", "B5c1",
                "F6c1", "B6c1", "F7c1", "B7c1", "B4",   "B5",   "B6",   "B7"}));
}

// Megatron runs all forwards first when m == p.
TEST(PipelineSchedule, InterleavedAllWarmupWhenMicrobatchesEqualStages) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::interleaved_1f1b, 2, 2, 2);
  const std::vector<std::string> expected = {"F0",   "F1",   "F0c1", "F1c1",
                                             "B0c1", "B1c1", "B0",   "B1"};
  EXPECT_EQ(names(schedule[0]), expected);
  EXPECT_EQ(names(schedule[1]), expected);
}

// Qi et al. 2024, Figure 3 (ZB-H1): 4 stages, 8 micro-batches; the last
// stage defers its first 3 W's, the first stage none.
TEST(PipelineSchedule, ZbH1SmallCase) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::zb_h1, 4, 8, 1);
  ASSERT_EQ(schedule.size(), 4u);
  EXPECT_EQ(names(schedule[0]),
            (std::vector<std::string>{"F0", "F1", "F2", "F3", "B0", "W0", "F4", "B1",
                                      "W1", "F5", "B2", "W2", "F6", "B3", "W3", "F7",
                                      "B4", "W4", "B5", "W5", "B6", "W6", "B7", "W7"}));
  EXPECT_EQ(names(schedule[1]),
            (std::vector<std::string>{"F0", "F1", "F2", "B0", "F3", "B1", "W0", "F4",
                                      "B2", "W1", "F5", "B3", "W2", "F6", "B4", "W3",
                                      "F7", "B5", "W4", "B6", "W5", "B7", "W6", "W7"}));
  EXPECT_EQ(names(schedule[3]),
            (std::vector<std::string>{"F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3",
                                      "W0", "F4", "B4", "W1", "F5", "B5", "W2", "F6",
                                      "B6", "W3", "F7", "B7", "W4", "W5", "W6", "W7"}));
}

TEST(PipelineSchedule, RejectsInvalidArguments) {
  EXPECT_THROW(pipeline_schedule(ScheduleKind::one_f_one_b, 0, 4, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(ScheduleKind::gpipe, 2, 0, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(ScheduleKind::one_f_one_b, 2, 4, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(ScheduleKind::interleaved_1f1b, 4, 6, 2), std::invalid_argument);
}

// On every rank each (chunk, micro-batch) gets one F, one B and, for zb_h1,
// one W, with B after F and W after B.
TEST(PipelineSchedule, EveryActionExactlyOnceAndInOrder) {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,
                            ScheduleKind::interleaved_1f1b, ScheduleKind::zb_h1}) {
    const bool split = kind == ScheduleKind::zb_h1;
    for (const auto& [p, m, v] : grid(kind)) {
      SCOPED_TRACE(case_name(p, m, v) + " kind=" + std::to_string(static_cast<int>(kind)));
      const Schedule schedule = pipeline_schedule(kind, p, m, v);
      ASSERT_EQ(schedule.size(), static_cast<size_t>(p));
      for (const std::vector<PipelineAction>& actions : schedule) {
        std::set<std::tuple<TaskKind, int, int>> done;
        for (const PipelineAction& a : actions) {
          ASSERT_GE(a.chunk, 0);
          ASSERT_LT(a.chunk, v);
          ASSERT_GE(a.microbatch, 0);
          ASSERT_LT(a.microbatch, m);
          ASSERT_TRUE(done.insert({a.kind, a.chunk, a.microbatch}).second) << to_string(a);
          if (a.kind == TaskKind::B) {
            EXPECT_TRUE(done.count({TaskKind::F, a.chunk, a.microbatch})) << to_string(a);
          }
          if (a.kind == TaskKind::W) {
            EXPECT_TRUE(done.count({TaskKind::B, a.chunk, a.microbatch})) << to_string(a);
          }
        }
        EXPECT_EQ(actions.size(), static_cast<size_t>(m * v * (split ? 3 : 2)));
      }
    }
  }
}

TEST(PipelineSchedule, NeverDeadlocks) {
  const ChunkTimes times{1, 2, 1};
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,
                            ScheduleKind::interleaved_1f1b, ScheduleKind::zb_h1}) {
    for (const auto& [p, m, v] : grid(kind)) {
      SCOPED_TRACE(case_name(p, m, v) + " kind=" + std::to_string(static_cast<int>(kind)));
      EXPECT_FALSE(evaluate(pipeline_schedule(kind, p, m, v), v, times).deadlocked);
    }
  }
}

// (m + p - 1)(T_F + T_B) for any T_F, T_B.
TEST(PipelineSchedule, GpipeAndOneFOneBMakespan) {
  for (const ChunkTimes times : {ChunkTimes{1, 1, 0}, ChunkTimes{1, 2, 0}, ChunkTimes{3, 2, 0}}) {
    for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b}) {
      for (const auto& [p, m, v] : grid(kind)) {
        SCOPED_TRACE(case_name(p, m, v) + " kind=" + std::to_string(static_cast<int>(kind)));
        const Timeline timeline = evaluate(pipeline_schedule(kind, p, m, v), v, times);
        EXPECT_EQ(timeline.makespan_s, (m + p - 1) * (times.forward_s + times.backward_s));
      }
    }
  }
}

// With T_F/v, T_B/v per chunk: m (T_F + T_B) + (p - 1)(T_F + T_B) / v.
// Per-chunk times are whole numbers so the comparison is exact.
TEST(PipelineSchedule, InterleavedMakespan) {
  for (const ChunkTimes times : {ChunkTimes{1, 1, 0}, ChunkTimes{1, 2, 0}, ChunkTimes{2, 3, 0}}) {
    for (const auto& [p, m, v] : grid(ScheduleKind::interleaved_1f1b)) {
      SCOPED_TRACE(case_name(p, m, v));
      const double per_chunk_s = times.forward_s + times.backward_s;
      const Timeline timeline =
          evaluate(pipeline_schedule(ScheduleKind::interleaved_1f1b, p, m, v), v, times);
      EXPECT_EQ(timeline.makespan_s, m * v * per_chunk_s + (p - 1) * per_chunk_s);
    }
  }
}

// T_F = T_B = T_W = 1: m (T_F + T_B + T_W) + (p - 1)(T_F + T_B - T_W) once
// m >= p, and no rank holds more than p micro-batches' activations, as in 1F1B.
// With m < p the first micro-batch's chain sets the pace: 1F1B's
// (m + p - 1)(T_F + T_B) plus the last W.
TEST(PipelineSchedule, ZbH1MakespanAndMemory) {
  const ChunkTimes times{1, 1, 1};
  for (const auto& [p, m, v] : grid(ScheduleKind::zb_h1)) {
    SCOPED_TRACE(case_name(p, m, v));
    const Timeline timeline = evaluate(pipeline_schedule(ScheduleKind::zb_h1, p, m, v), v, times);
    const double expected_s = m >= p ? 3 * m + (p - 1) : 2 * (m + p - 1) + 1;
    EXPECT_EQ(timeline.makespan_s, expected_s);
    for (int rank = 0; rank < p; ++rank) {
      EXPECT_EQ(timeline.peak_in_flight[rank], std::min(p, m)) << "rank " << rank;
    }
  }
}

TEST(PipelineSchedule, OneFOneBPeakInFlight) {
  for (const auto& [p, m, v] : grid(ScheduleKind::one_f_one_b)) {
    SCOPED_TRACE(case_name(p, m, v));
    const Timeline timeline =
        evaluate(pipeline_schedule(ScheduleKind::one_f_one_b, p, m, v), v, ChunkTimes{});
    for (int rank = 0; rank < p; ++rank) {
      EXPECT_EQ(timeline.peak_in_flight[rank], std::min(p - rank, m)) << "rank " << rank;
    }
  }
}

}  // namespace
}  // namespace simtrain
