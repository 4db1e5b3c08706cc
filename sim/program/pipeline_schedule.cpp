#include "sim/program/pipeline_schedule.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace simtrain {

namespace {

using RankActions = std::vector<PipelineAction>;

PipelineAction forward(int microbatch, int chunk = 0) { return {TaskKind::F, chunk, microbatch}; }
PipelineAction backward(int microbatch, int chunk = 0) { return {TaskKind::B, chunk, microbatch}; }
PipelineAction weight_grad(int microbatch) { return {TaskKind::W, 0, microbatch}; }

RankActions gpipe_rank(int m) {
  RankActions actions;
  for (int i = 0; i < m; ++i) actions.push_back(forward(i));
  for (int i = 0; i < m; ++i) actions.push_back(backward(i));
  return actions;
}

// Megatron-LM forward_backward_pipelining_without_interleaving: warm-up
// forwards, then one forward and one backward per step, then the remaining
// backwards.
RankActions one_f_one_b_rank(int p, int m, int rank) {
  const int warmup = warmup_forwards(ScheduleKind::one_f_one_b, p, m, 1, rank);
  RankActions actions;
  for (int i = 0; i < warmup; ++i) actions.push_back(forward(i));
  for (int i = 0; i < m - warmup; ++i) {
    actions.push_back(forward(warmup + i));
    actions.push_back(backward(i));
  }
  for (int i = m - warmup; i < m; ++i) actions.push_back(backward(i));
  return actions;
}

// ZB-H1 (Qi et al., ICLR 2024) as the zb-h1 patch of
// sail-sg/zero-bubble-pipeline-parallelism builds it on Megatron's 1F1B: F and
// B keep the 1F1B order, B computes input grads only, and rank r holds back r
// weight-grad passes to fill the cool-down bubbles. After each backward from
// its (r+1)-th on, the rank runs one W, and the r left run at the end. The
// patch runs a W that is not held back with its own B; taking the oldest
// pending W instead (as in the paper's Figure 3) frees as many micro-batches
// at the same times.
RankActions zb_h1_rank(int p, int m, int rank) {
  RankActions actions;
  std::deque<int> pending_weight_grads;
  int backwards_done = 0;
  for (const PipelineAction& action : one_f_one_b_rank(p, m, rank)) {
    actions.push_back(action);
    if (action.kind != TaskKind::B) continue;
    pending_weight_grads.push_back(action.microbatch);
    if (backwards_done++ >= rank) {
      actions.push_back(weight_grad(pending_weight_grads.front()));
      pending_weight_grads.pop_front();
    }
  }
  for (int microbatch : pending_weight_grads) actions.push_back(weight_grad(microbatch));
  return actions;
}

// Megatron-LM forward_backward_pipelining_with_interleaving as of core v0.7:
// virtual micro-batch k walks the chunks in groups of p micro-batches (later
// releases make the group size tunable and drop the m == p rule below).
int interleaved_chunk(int k, int p, int v, bool is_forward) {
  const int chunk = (k % (p * v)) / p;
  return is_forward ? chunk : v - 1 - chunk;
}

int interleaved_microbatch(int k, int p, int v) { return (k / (p * v)) * p + k % p; }

RankActions interleaved_rank(int p, int m, int v, int rank) {
  const int total = m * v;
  const int warmup = warmup_forwards(ScheduleKind::interleaved_1f1b, p, m, v, rank);
  auto forward_k = [&](int k) {
    return forward(interleaved_microbatch(k, p, v), interleaved_chunk(k, p, v, true));
  };
  auto backward_k = [&](int k) {
    return backward(interleaved_microbatch(k, p, v), interleaved_chunk(k, p, v, false));
  };
  RankActions actions;
  for (int k = 0; k < warmup; ++k) actions.push_back(forward_k(k));
  for (int k = 0; k < total - warmup; ++k) {
    actions.push_back(forward_k(warmup + k));
    actions.push_back(backward_k(k));
  }
  for (int k = total - warmup; k < total; ++k) actions.push_back(backward_k(k));
  return actions;
}

void check_arguments(ScheduleKind kind, int p, int m, int v) {
  if (p < 1 || m < 1 || v < 1) {
    throw std::invalid_argument("pipeline_schedule: p, m and v must be positive");
  }
  if (kind != ScheduleKind::interleaved_1f1b && v != 1) {
    throw std::invalid_argument("pipeline_schedule: v > 1 needs interleaved_1f1b");
  }
  if (kind == ScheduleKind::interleaved_1f1b && m % p != 0) {
    throw std::invalid_argument("pipeline_schedule: interleaved_1f1b needs m % p == 0");
  }
}

}  // namespace

int warmup_forwards(ScheduleKind kind, int p, int m, int v, int rank) {
  switch (kind) {
    case ScheduleKind::gpipe: return m;
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1: return std::min(p - rank - 1, m);
    case ScheduleKind::interleaved_1f1b:
      // Megatron runs every forward first when there are exactly p micro-batches.
      return m == p ? m * v : std::min((p - rank - 1) * 2 + (v - 1) * p, m * v);
  }
  return m;
}

std::string to_string(const PipelineAction& action) {
  static constexpr char kLetters[] = {'F', 'B', 'W'};
  std::string text = kLetters[static_cast<int>(action.kind)] + std::to_string(action.microbatch);
  if (action.chunk != 0) text += "c" + std::to_string(action.chunk);
  return text;
}

std::vector<std::vector<PipelineAction>> pipeline_schedule(ScheduleKind kind, int p, int m, int v) {
  check_arguments(kind, p, m, v);
  std::vector<RankActions> ranks;
  for (int rank = 0; rank < p; ++rank) {
    switch (kind) {
      case ScheduleKind::gpipe: ranks.push_back(gpipe_rank(m)); break;
      case ScheduleKind::one_f_one_b: ranks.push_back(one_f_one_b_rank(p, m, rank)); break;
      case ScheduleKind::interleaved_1f1b: ranks.push_back(interleaved_rank(p, m, v, rank)); break;
      case ScheduleKind::zb_h1: ranks.push_back(zb_h1_rank(p, m, rank)); break;
    }
  }
  return ranks;
}

std::vector<std::vector<PipelineAction>> pipeline_schedule(const Scenario& scenario) {
  return pipeline_schedule(scenario.parallel.schedule, static_cast<int>(scenario.parallel.pipeline),
                           static_cast<int>(scenario.micro_batches()), static_cast<int>(scenario.virtual_stages()));
}

}  // namespace simtrain
