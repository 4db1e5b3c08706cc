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

#include "test_support.hpp"

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

constexpr ScheduleKind kAllKinds[] = {ScheduleKind::gpipe,    ScheduleKind::one_f_one_b, ScheduleKind::interleaved_1f1b,
                                      ScheduleKind::zb_h1,    ScheduleKind::dualpipe,    ScheduleKind::dualpipe_v};

// Every (p, m, v) the schedule accepts within the test grid (DualPipe's as
// deepseek-ai/DualPipe asserts them: dualpipe.py:332-333, dualpipev.py:318).
std::vector<std::tuple<int, int, int>> grid(ScheduleKind kind) {
  std::vector<std::tuple<int, int, int>> cases;
  const int max_chunks = kind == ScheduleKind::interleaved_1f1b ? 4 : 1;
  for (int p : kStageCounts) {
    for (int m = 1; m <= kMaxMicrobatches; ++m) {
      for (int v = 1; v <= max_chunks; ++v) {
        if (kind == ScheduleKind::interleaved_1f1b && m % p != 0) continue;
        if (kind == ScheduleKind::dualpipe && (p % 2 != 0 || m % 2 != 0 || m < 2 * p)) continue;
        if (kind == ScheduleKind::dualpipe_v && m < 2 * p) continue;
        cases.emplace_back(p, m, kind == ScheduleKind::dualpipe_v ? 2 : v);
      }
    }
  }
  return cases;
}

// Durations of one action on one chunk; pair_s: DualPipe's overlapped pair, a
// forward and a whole backward (B and W) of another micro-batch run as one.
struct ChunkTimes {
  double forward_s = 1;
  double backward_s = 1;
  double weight_grad_s = 1;
  double pair_s = 3;

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
  std::vector<double> busy_s;       // per rank: time computing
};

// Runs each rank's list in order, every action as soon as the rank is free
// and its inputs exist; communication is free. Model stages as PipelineStages
// places them: F(k, i) needs F of the stage before k; B(k, i) needs F(k, i)
// and B of the stage after k; W(k, i) needs B(k, i). A DualPipe pair (F&, B&
// and the B's W) starts once the inputs of both are there and takes pair_s.
class Evaluator {
public:
  Evaluator(const Schedule& schedule, PipelineStages stages, ChunkTimes times)
      : schedule_(schedule), p_(static_cast<int>(schedule.size())), stages_(stages), times_(times) {}

  Timeline run() {
    Timeline timeline;
    timeline.busy_s.assign(p_, 0);
    std::vector<size_t> next(p_, 0);
    std::vector<double> rank_free_s(p_, 0);
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (int rank = 0; rank < p_; ++rank) {
        while (next[rank] < schedule_[rank].size()) {
          const std::vector<PipelineAction>& actions = schedule_[rank];
          const bool pair = actions[next[rank]].overlapped;
          const size_t count = pair ? 3 : 1;  // F&, B& and its W
          std::optional<double> inputs_ready_s = inputs_ready(actions[next[rank]], rank);
          if (pair && inputs_ready_s) {
            const std::optional<double> backward_ready_s = inputs_ready(actions[next[rank] + 1], rank);
            inputs_ready_s = backward_ready_s ? std::optional(std::max(*inputs_ready_s, *backward_ready_s)) : std::nullopt;
          }
          if (!inputs_ready_s) break;
          const double start_s = std::max(rank_free_s[rank], *inputs_ready_s);
          rank_free_s[rank] = start_s + (pair ? times_.pair_s : times_.of(actions[next[rank]].kind));
          timeline.busy_s[rank] += rank_free_s[rank] - start_s;
          for (size_t k = 0; k < count; ++k, ++next[rank]) {
            const PipelineAction& action = actions[next[rank]];
            finish_s_[{action.kind, stage(action, rank), action.microbatch}] = rank_free_s[rank];
          }
          timeline.makespan_s = std::max(timeline.makespan_s, rank_free_s[rank]);
          progressed = true;
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
  int stage(const PipelineAction& action, int rank) const { return stages_.of(action.chunk, rank); }

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
        if (stages_.before(k) >= 0) inputs.push_back(finish_s(TaskKind::F, stages_.before(k), i));
        break;
      case TaskKind::B:
        inputs.push_back(finish_s(TaskKind::F, k, i));
        if (stages_.after(k) >= 0) inputs.push_back(finish_s(TaskKind::B, stages_.after(k), i));
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
  PipelineStages stages_;
  ChunkTimes times_;
  std::map<std::tuple<TaskKind, int, int>, double> finish_s_;
};

Timeline evaluate(ScheduleKind kind, int p, int m, int v, ChunkTimes times) {
  return Evaluator(pipeline_schedule(kind, p, m, v), {kind, p, v}, times).run();
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

// DeepSeek-V3 technical report (arXiv 2412.19437), Figure 5, as drawn in
// deepseek-ai/DualPipe's README (images/dualpipe.png at 3da1bbe): 8 ranks, 20
// micro-batches, 10 each way. Read cell by cell from the figure for devices
// 0, 3 (the fold, whose first main-phase F and B are not overlapped) and 7.
// The figure numbers the micro-batches entering at device 0 (here 0..9, chunk
// 0) and leaves the others' unnumbered (here 10..19, chunk 1, in the order
// each direction runs them); a two-cell "Backward" is a whole backward, here
// a B with its W; a black-bordered pair is F& B& (with the B's W).
TEST(PipelineSchedule, DualPipeFigure5) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::dualpipe, 8, 20, 1);
  ASSERT_EQ(schedule.size(), 8u);
  EXPECT_EQ(names(schedule[0]), (std::vector<std::string>{
      "F0", "F1", "F2", "F3", "F4", "F5", "F6", "F10c1", "B10c1", "W10c1", "F11c1", "B11c1", "W11c1", "F12c1",
      "B12c1", "W12c1", "F13c1", "F7&", "B13c1&", "W13c1", "F14c1&", "B0&", "W0", "F8&", "B14c1&", "W14c1",
      "F15c1&", "B1&", "W1", "F9&", "B15c1&", "W15c1", "F16c1&", "B2&", "W2", "B16c1", "W16c1", "F17c1&",
      "B3&", "W3", "B17c1", "W17c1", "F18c1&", "B4&", "W4", "B18c1", "W18c1", "F19c1&", "B5&", "W5", "B19c1",
      "W19c1", "B6", "W6", "B7", "W7", "B8", "W8", "B9", "W9"}));
  EXPECT_EQ(names(schedule[3]), (std::vector<std::string>{
      "F0", "F10c1", "F1", "F11c1", "F2", "F12c1", "F3", "F13c1", "F4", "B10c1", "W10c1", "F14c1&", "B0&",
      "W0", "F5&", "B11c1&", "W11c1", "F15c1&", "B1&", "W1", "F6&", "B12c1&", "W12c1", "F16c1&", "B2&", "W2",
      "F7&", "B13c1&", "W13c1", "F17c1&", "B3&", "W3", "F8&", "B14c1&", "W14c1", "F18c1&", "B4&", "W4", "F9&",
      "B15c1&", "W15c1", "F19c1&", "B5&", "W5", "B16c1", "W16c1", "B6", "W6", "B17c1", "W17c1", "B7", "W7",
      "B18c1", "B8", "B19c1", "B9", "W18c1", "W8", "W19c1", "W9"}));
  EXPECT_EQ(names(schedule[7]), (std::vector<std::string>{
      "F10c1", "F11c1", "F12c1", "F13c1", "F14c1", "F15c1", "F16c1", "F0", "B0", "W0", "F1", "B1", "W1", "F2",
      "B2", "W2", "F3", "F17c1&", "B3&", "W3", "F4&", "B10c1&", "W10c1", "F18c1&", "B4&", "W4", "F5&",
      "B11c1&", "W11c1", "F19c1&", "B5&", "W5", "F6&", "B12c1&", "W12c1", "B6", "W6", "F7&", "B13c1&", "W13c1",
      "B7", "W7", "F8&", "B14c1&", "W14c1", "B8", "W8", "F9&", "B15c1&", "W15c1", "B9", "W9", "B16c1", "W16c1",
      "B17c1", "W17c1", "B18c1", "W18c1", "B19c1", "W19c1"}));
}

// deepseek-ai/DualPipe's README figure of DualPipeV (images/dualpipev.png at
// 3da1bbe): 4 ranks (8 stages), 10 micro-batches; the figure's white numbers
// are chunk 1 (stages 4..7, back up the ranks).
TEST(PipelineSchedule, DualPipeVFigure) {
  const Schedule schedule = pipeline_schedule(ScheduleKind::dualpipe_v, 4, 10, 2);
  ASSERT_EQ(schedule.size(), 4u);
  EXPECT_EQ(names(schedule[0]), (std::vector<std::string>{
      "F0", "F1", "F2", "F3", "F4", "F5", "F6", "F0c1", "B0c1", "W0c1", "F1c1", "B1c1", "W1c1", "F2c1", "B2c1",
      "W2c1", "F3c1", "F7&", "B3c1&", "W3c1", "F4c1&", "B0&", "W0", "F8&", "B4c1&", "W4c1", "F5c1&", "B1&",
      "W1", "F9&", "B5c1&", "W5c1", "F6c1&", "B2&", "W2", "B6c1", "W6c1", "F7c1&", "B3&", "W3", "B7c1", "W7c1",
      "F8c1&", "B4&", "W4", "B8c1", "W8c1", "F9c1&", "B5&", "W5", "B9c1", "W9c1", "B6", "W6", "B7", "W7", "B8",
      "W8", "B9", "W9"}));
  EXPECT_EQ(names(schedule[3]), (std::vector<std::string>{
      "F0", "F0c1", "F1", "F1c1", "F2", "F2c1", "F3", "F3c1", "F4", "B0c1", "W0c1", "F4c1&", "B0&", "W0",
      "F5&", "B1c1&", "W1c1", "F5c1&", "B1&", "W1", "F6&", "B2c1&", "W2c1", "F6c1&", "B2&", "W2", "F7&",
      "B3c1&", "W3c1", "F7c1&", "B3&", "W3", "F8&", "B4c1&", "W4c1", "F8c1&", "B4&", "W4", "F9&", "B5c1&",
      "W5c1", "F9c1&", "B5&", "W5", "B6c1", "W6c1", "B6", "W6", "B7c1", "W7c1", "B7", "W7", "B8c1", "B8",
      "B9c1", "B9", "W8c1", "W8", "W9c1", "W9"}));
}

// deepseek-ai/DualPipe's README (3da1bbe), after the DeepSeek-V3 report's
// Table 2: the bubble is (PP/2 - 1)(F&B + B - 3W), B a whole backward, F&B an
// overlapped pair, PP the model's stages (dualpipe: p; dualpipe_v: 2p). With
// F, B (input) and W of one duration t, and a pair between a whole backward
// (2t: its forward hidden) and a forward plus a whole backward (3t: nothing
// hidden), the most any rank idles is exactly that. With nothing hidden every
// rank computes alike, m chunks of 3t (2m for dualpipe_v), so the step is
// that plus the bubble.
TEST(PipelineSchedule, DualPipeBubbleClosedForm) {
  for (ScheduleKind kind : {ScheduleKind::dualpipe, ScheduleKind::dualpipe_v}) {
    const int stages_per_rank = kind == ScheduleKind::dualpipe ? 1 : 2;
    for (const auto& [p, m, v] : grid(kind)) {
      for (const double pair_s : {2.0, 2.5, 3.0}) {
        SCOPED_TRACE(case_name(p, m, v) + " pair " + std::to_string(pair_s) + " kind=" + to_string(kind));
        const Timeline timeline = evaluate(kind, p, m, v, ChunkTimes{1, 1, 1, pair_s});
        ASSERT_FALSE(timeline.deadlocked);
        const int pp = p * stages_per_rank;
        const double whole_backward_s = 2, weight_grad_s = 1;
        const double bubble_s = (pp / 2 - 1) * (pair_s + whole_backward_s - 3 * weight_grad_s);
        double most_idle_s = 0;
        for (double busy_s : timeline.busy_s) most_idle_s = std::max(most_idle_s, timeline.makespan_s - busy_s);
        EXPECT_EQ(most_idle_s, bubble_s);
        if (pair_s == 3.0) EXPECT_EQ(timeline.makespan_s, 3.0 * m * v + bubble_s);
      }
    }
  }
}

// The same table: activations of PP + 1 chunks per device (a chunk being one
// of the PP stages), on every rank, against 1F1B's PP on its first.
TEST(PipelineSchedule, DualPipeHoldsPpPlusOneChunksOfActivations) {
  for (ScheduleKind kind : {ScheduleKind::dualpipe, ScheduleKind::dualpipe_v}) {
    for (const auto& [p, m, v] : grid(kind)) {
      SCOPED_TRACE(case_name(p, m, v) + " kind=" + to_string(kind));
      const Timeline timeline = evaluate(kind, p, m, v, ChunkTimes{});
      for (int rank = 0; rank < p; ++rank) EXPECT_EQ(timeline.peak_in_flight[rank], p * v + 1) << "rank " << rank;
    }
  }
}

// Each overlapped pair is a forward of one chunk and a whole backward of the
// other (dualpipe.py _forward_backward_chunk(phase0, phase1), phases unlike),
// of different micro-batches: F& then B& then the B's W.
TEST(PipelineSchedule, DualPipePairsAForwardWithTheOtherChunksBackward) {
  for (ScheduleKind kind : {ScheduleKind::dualpipe, ScheduleKind::dualpipe_v}) {
    for (const auto& [p, m, v] : grid(kind)) {
      SCOPED_TRACE(case_name(p, m, v) + " kind=" + to_string(kind));
      const Schedule schedule = pipeline_schedule(kind, p, m, v);
      for (const std::vector<PipelineAction>& actions : schedule) {
        for (size_t i = 0; i < actions.size(); ++i) {
          if (!actions[i].overlapped || actions[i].kind != TaskKind::F) continue;
          ASSERT_LT(i + 2, actions.size());
          const PipelineAction &backward = actions[i + 1], &weight_grad = actions[i + 2];
          EXPECT_TRUE(backward.overlapped && backward.kind == TaskKind::B) << to_string(backward);
          EXPECT_NE(backward.chunk, actions[i].chunk);
          EXPECT_EQ(weight_grad, (PipelineAction{TaskKind::W, backward.chunk, backward.microbatch}));
        }
      }
    }
  }
}

// What deepseek-ai/DualPipe's code asserts (dualpipe.py:332-333,
// dualpipev.py:318), a scenario is refused with: file, field and reason.
TEST(PipelineSchedule, ScenarioRefusesWhatDualPipeCannotRun) {
  auto error = [](int pp, int layers, const std::string& schedule, int micro_batches) {
    return fixtures::scenario_error(fixtures::scenario_json(1, pp, 1, layers, schedule, 0, micro_batches));
  };
  EXPECT_EQ(error(4, 8, "dualpipe", 8), "no error");
  EXPECT_EQ(error(2, 8, "dualpipe_v", 5), "no error");
  EXPECT_EQ(error(3, 6, "dualpipe", 12),
            "test.json: parallelism.pipeline_model_parallel_size: dualpipe needs an even pipeline size (micro-batches "
            "enter from both ends), got 3");
  EXPECT_EQ(error(4, 8, "dualpipe", 6),
            "test.json: training.global_batch_size: dualpipe needs an even number of micro-batches per pipeline, at "
            "least twice pipeline_model_parallel_size (8), got 6");
  EXPECT_EQ(error(4, 8, "dualpipe", 9),
            "test.json: training.global_batch_size: dualpipe needs an even number of micro-batches per pipeline, at "
            "least twice pipeline_model_parallel_size (8), got 9");
  EXPECT_EQ(error(4, 8, "dualpipe_v", 7),
            "test.json: training.global_batch_size: dualpipe_v needs micro-batches per pipeline, at least twice "
            "pipeline_model_parallel_size (8), got 7");
  nlohmann::json three_chunks = fixtures::scenario_json(1, 2, 1, 12, "dualpipe_v", 0, 4);
  three_chunks["parallelism"]["num_virtual_stages_per_pipeline_rank"] = 3;
  EXPECT_EQ(fixtures::scenario_error(three_chunks),
            "test.json: parallelism.schedule: dualpipe_v runs two model chunks per pipeline rank; give "
            "num_virtual_stages_per_pipeline_rank 2, or a pipeline_model_parallel_layout of 2 x "
            "pipeline_model_parallel_size stages, or neither");
  EXPECT_EQ(fixtures::scenario_from(fixtures::scenario_json(1, 2, 1, 8, "dualpipe_v", 0, 4)).virtual_stages(), 2);
}

TEST(PipelineSchedule, RejectsInvalidArguments) {
  EXPECT_THROW(pipeline_schedule(ScheduleKind::one_f_one_b, 0, 4, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(ScheduleKind::gpipe, 2, 0, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(ScheduleKind::one_f_one_b, 2, 4, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(ScheduleKind::interleaved_1f1b, 4, 6, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(ScheduleKind::dualpipe, 3, 12, 1), std::invalid_argument);  // odd p
  EXPECT_THROW(pipeline_schedule(ScheduleKind::dualpipe, 4, 9, 1), std::invalid_argument);   // odd m
  EXPECT_THROW(pipeline_schedule(ScheduleKind::dualpipe, 4, 6, 1), std::invalid_argument);   // m < 2p
  EXPECT_THROW(pipeline_schedule(ScheduleKind::dualpipe_v, 4, 8, 1), std::invalid_argument); // v != 2
  EXPECT_THROW(pipeline_schedule(ScheduleKind::dualpipe_v, 4, 7, 2), std::invalid_argument); // m < 2p
}

// On every rank each (chunk, micro-batch) gets one F, one B and, where the
// schedule splits the backward, one W, with B after F and W after B. DualPipe
// runs micro-batches 0..m/2-1 on chunk 0, m/2..m-1 on chunk 1.
TEST(PipelineSchedule, EveryActionExactlyOnceAndInOrder) {
  for (ScheduleKind kind : kAllKinds) {
    const bool split = splits_backward(kind);
    for (const auto& [p, m, v] : grid(kind)) {
      SCOPED_TRACE(case_name(p, m, v) + " kind=" + std::to_string(static_cast<int>(kind)));
      const Schedule schedule = pipeline_schedule(kind, p, m, v);
      ASSERT_EQ(schedule.size(), static_cast<size_t>(p));
      for (const std::vector<PipelineAction>& actions : schedule) {
        std::set<std::tuple<TaskKind, int, int>> done;
        for (const PipelineAction& a : actions) {
          ASSERT_GE(a.chunk, 0);
          ASSERT_LT(a.chunk, (PipelineStages{kind, p, v}.chunks_per_rank()));
          if (kind == ScheduleKind::dualpipe) ASSERT_EQ(a.chunk, a.microbatch >= m / 2) << to_string(a);
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
        const int chunk_microbatches = kind == ScheduleKind::dualpipe ? m : m * v;
        EXPECT_EQ(actions.size(), static_cast<size_t>(chunk_microbatches * (split ? 3 : 2)));
      }
    }
  }
}

TEST(PipelineSchedule, NeverDeadlocks) {
  const ChunkTimes times{1, 2, 1};
  for (ScheduleKind kind : kAllKinds) {
    for (const auto& [p, m, v] : grid(kind)) {
      SCOPED_TRACE(case_name(p, m, v) + " kind=" + std::to_string(static_cast<int>(kind)));
      EXPECT_FALSE(evaluate(kind, p, m, v, times).deadlocked);
    }
  }
}

// (m + p - 1)(T_F + T_B) for any T_F, T_B.
TEST(PipelineSchedule, GpipeAndOneFOneBMakespan) {
  for (const ChunkTimes times : {ChunkTimes{1, 1, 0}, ChunkTimes{1, 2, 0}, ChunkTimes{3, 2, 0}}) {
    for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b}) {
      for (const auto& [p, m, v] : grid(kind)) {
        SCOPED_TRACE(case_name(p, m, v) + " kind=" + std::to_string(static_cast<int>(kind)));
        const Timeline timeline = evaluate(kind, p, m, v, times);
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
          evaluate(ScheduleKind::interleaved_1f1b, p, m, v, times);
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
    const Timeline timeline = evaluate(ScheduleKind::zb_h1, p, m, v, times);
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
        evaluate(ScheduleKind::one_f_one_b, p, m, v, ChunkTimes{});
    for (int rank = 0; rank < p; ++rank) {
      EXPECT_EQ(timeline.peak_in_flight[rank], std::min(p - rank, m)) << "rank " << rank;
    }
  }
}

}  // namespace
}  // namespace simtrain
