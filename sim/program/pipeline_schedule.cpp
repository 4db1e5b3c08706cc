#include "sim/program/pipeline_schedule.hpp"

#include <algorithm>
#include <array>
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

// DualPipe's and DualPipeV's step order as deepseek-ai/DualPipe runs it (at
// 3da1bbe: DualPipe.step, dualpipe/dualpipe.py:355-424; DualPipeV.step,
// dualpipe/dualpipev.py:330-395; the two differ only in what they count).
// A rank at `position` of `ranks` (DualPipe: half_rank of num_half_ranks,
// folding its ranks at the middle; DualPipeV: rank of num_ranks) runs
// `per_chunk` micro-batches through each of its two chunks. The code names
// its two chunks by phase: phase 0 is the chunk its micro-batches reach
// first. Backwards are whole (B with its W right after) except where the
// code enables zero bubble (WeightGradStore): there the W waits in a FIFO
// for the next _weight_chunk.
class DualRank {
public:
  DualRank(int ranks, int position, int per_chunk, std::array<int, 2> chunk_of_phase, std::array<int, 2> first_microbatch)
      : ranks_(ranks), position_(position), per_chunk_(per_chunk), chunk_of_phase_(chunk_of_phase),
        first_microbatch_(first_microbatch) {}

  RankActions actions() {
    const int n = ranks_, h = position_;
    for (int i = 0; i < (n - h - 1) * 2; ++i) forward(0);  // step 1: nF0
    for (int i = 0; i < h + 1; ++i) forward(0), forward(1);  // step 2: nF0F1
    for (int i = 0; i < n - h - 1; ++i) backward(1, true), weight(), forward(1);  // step 3: nB1W1F1
    for (int i = 0; i < per_chunk_ - 2 * n + h + 1; ++i) {  // step 4 (main): nF0B1F1B0
      // The rank at the fold does not overlap its first pair, "to further
      // reduce bubble size" (dualpipe.py:384-391).
      const bool alone = i == 0 && h == n - 1;
      alone ? (forward(0), backward(1, false)) : pair(0, 1);
      pair(1, 0);
    }
    for (int i = 0; i < n - h - 1; ++i) backward(1, false), pair(1, 0);  // step 5: nB1F1B0
    bool zero_bubble = false;  // step 6: nB1B0, the second half zero bubble
    for (int i = 0; i < h + 1; ++i) {
      if (i == (h + 1) / 2 && h % 2 == 1) zero_bubble = true;
      backward(1, zero_bubble);
      if (i == (h + 1) / 2 && h % 2 == 0) zero_bubble = true;
      backward(0, zero_bubble);
    }
    for (int i = 0; i < n - h - 1; ++i) weight(), backward(0, true);  // step 7: nWB0
    for (int i = 0; i < h + 1; ++i) weight();  // step 8: nW
    return std::move(actions_);
  }

private:
  int next_microbatch(int chunk, std::array<int, 2>& counts) { return first_microbatch_[chunk] + counts[chunk]++; }

  void forward(int phase, bool overlapped = false) {
    const int chunk = chunk_of_phase_[phase];
    actions_.push_back({TaskKind::F, chunk, next_microbatch(chunk, forwards_), overlapped});
  }

  void backward(int phase, bool zero_bubble, bool overlapped = false) {
    const int chunk = chunk_of_phase_[phase];
    const PipelineAction input_grads{TaskKind::B, chunk, next_microbatch(chunk, backwards_), overlapped};
    actions_.push_back(input_grads);
    const PipelineAction weight_grads{TaskKind::W, chunk, input_grads.microbatch};
    zero_bubble ? pending_weight_grads_.push_back(weight_grads) : actions_.push_back(weight_grads);
  }

  void weight() {
    actions_.push_back(pending_weight_grads_.front());
    pending_weight_grads_.pop_front();
  }

  // _forward_backward_chunk: a forward of one phase overlapped with a whole backward of the other.
  void pair(int forward_phase, int backward_phase) {
    forward(forward_phase, true);
    backward(backward_phase, false, true);
  }

  const int ranks_, position_, per_chunk_;
  const std::array<int, 2> chunk_of_phase_, first_microbatch_;
  std::array<int, 2> forwards_{}, backwards_{};
  std::deque<PipelineAction> pending_weight_grads_;
  RankActions actions_;
};

// DualPipe: micro-batches 0..m/2-1 enter at rank 0 (chunk 0), m/2..m-1 at
// rank p-1 (chunk 1). For the ranks of the second half, phase 0 is chunk 1
// (dualpipe.py:355-356: "phase ^= self.is_in_second_half").
RankActions dualpipe_rank(int p, int m, int rank) {
  const bool second_half = rank >= p / 2;
  return DualRank(p / 2, std::min(rank, p - 1 - rank), m / 2, {int(second_half), int(!second_half)}, {0, m / 2})
      .actions();
}

// DualPipeV: every micro-batch enters at rank 0, runs chunk 0 down the ranks
// and chunk 1 back up.
RankActions dualpipe_v_rank(int p, int m, int rank) { return DualRank(p, rank, m, {0, 1}, {0, 0}).actions(); }

void check_arguments(ScheduleKind kind, int p, int m, int v) {
  if (p < 1 || m < 1 || v < 1) {
    throw std::invalid_argument("pipeline_schedule: p, m and v must be positive");
  }
  if (kind != ScheduleKind::interleaved_1f1b && kind != ScheduleKind::dualpipe_v && v != 1) {
    throw std::invalid_argument("pipeline_schedule: v > 1 needs interleaved_1f1b");
  }
  if (kind == ScheduleKind::interleaved_1f1b && m % p != 0) {
    throw std::invalid_argument("pipeline_schedule: interleaved_1f1b needs m % p == 0");
  }
  if (kind == ScheduleKind::dualpipe && (p % 2 != 0 || m % 2 != 0 || m < 2 * p || v != 1)) {
    throw std::invalid_argument("pipeline_schedule: dualpipe needs p and m even, m >= 2p and v == 1");
  }
  if (kind == ScheduleKind::dualpipe_v && (m < 2 * p || v != 2)) {
    throw std::invalid_argument("pipeline_schedule: dualpipe_v needs m >= 2p and v == 2");
  }
}

}  // namespace

int warmup_forwards(ScheduleKind kind, int p, int m, int v, int rank) {
  switch (kind) {
    case ScheduleKind::gpipe: return m;
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1: return std::min(p - rank - 1, m);
    case ScheduleKind::dualpipe:
    case ScheduleKind::dualpipe_v: {
      const std::vector<PipelineAction> actions = pipeline_schedule(kind, p, m, v)[rank];
      return static_cast<int>(std::find_if(actions.begin(), actions.end(),
                                           [](const PipelineAction& a) { return a.kind != TaskKind::F; }) -
                              actions.begin());
    }
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
  if (action.overlapped) text += "&";
  return text;
}

int PipelineStages::count() const { return kind == ScheduleKind::dualpipe ? 2 * p : p * v; }

int PipelineStages::chunks_per_rank() const { return kind == ScheduleKind::dualpipe ? 2 : v; }

int PipelineStages::of(int chunk, int rank) const {
  if (chunk == 1 && kind == ScheduleKind::dualpipe_v) return 2 * p - 1 - rank;
  if (chunk == 1 && kind == ScheduleKind::dualpipe) return p + (p - 1 - rank);
  return chunk * p + rank;
}

int PipelineStages::rank_of(int stage) const {
  if (stage >= p && kind != ScheduleKind::interleaved_1f1b) return 2 * p - 1 - stage;  // the second chunk, rising
  return stage % p;
}

int PipelineStages::before(int stage) const {
  const bool first = kind == ScheduleKind::dualpipe ? stage % p == 0 : stage == 0;
  return first ? -1 : stage - 1;
}

int PipelineStages::after(int stage) const {
  const bool last = kind == ScheduleKind::dualpipe ? stage % p == p - 1 : stage == count() - 1;
  return last ? -1 : stage + 1;
}

int PipelineStages::layers_of(int stage) const { return kind == ScheduleKind::dualpipe ? stage % p : stage; }

std::vector<std::vector<PipelineAction>> pipeline_schedule(ScheduleKind kind, int p, int m, int v) {
  check_arguments(kind, p, m, v);
  std::vector<RankActions> ranks;
  for (int rank = 0; rank < p; ++rank) {
    switch (kind) {
      case ScheduleKind::gpipe: ranks.push_back(gpipe_rank(m)); break;
      case ScheduleKind::one_f_one_b: ranks.push_back(one_f_one_b_rank(p, m, rank)); break;
      case ScheduleKind::interleaved_1f1b: ranks.push_back(interleaved_rank(p, m, v, rank)); break;
      case ScheduleKind::zb_h1: ranks.push_back(zb_h1_rank(p, m, rank)); break;
      case ScheduleKind::dualpipe: ranks.push_back(dualpipe_rank(p, m, rank)); break;
      case ScheduleKind::dualpipe_v: ranks.push_back(dualpipe_v_rank(p, m, rank)); break;
    }
  }
  return ranks;
}

PipelineStages pipeline_stages(const Scenario& scenario) {
  return {scenario.parallel.schedule, static_cast<int>(scenario.parallel.pipeline),
          static_cast<int>(scenario.virtual_stages())};
}

std::vector<std::vector<PipelineAction>> pipeline_schedule(const Scenario& scenario) {
  return pipeline_schedule(scenario.parallel.schedule, static_cast<int>(scenario.parallel.pipeline),
                           static_cast<int>(scenario.micro_batches()), static_cast<int>(scenario.virtual_stages()));
}

}  // namespace simtrain
