#include "sim/longrun/training_run.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>
#include <vector>

namespace simtrain {

std::string to_string(Tier tier) {
  switch (tier) {
    case Tier::host_memory: return "host memory";
    case Tier::peer_memory: return "peer host memory";
    case Tier::local_disk: return "local disk";
    case Tier::shared: return "shared storage";
  }
  return "?";
}

bool lost_with_node(Tier tier) { return tier == Tier::host_memory || tier == Tier::local_disk; }

namespace {

constexpr double never = std::numeric_limits<double>::infinity();
constexpr uint64_t progress_every_steps = uint64_t{1} << 20;

double checkpoint_write_seconds(const RunModel& m) { return m.checkpoint_every_steps > 0 ? m.checkpoint_write_seconds : 0; }
// What a save costs the run: its blocking part and the steps its background copies slow.
double save_seconds(const RunModel& m) {
  return m.checkpoint_every_steps > 0 ? m.checkpoint_write_seconds + m.persist_slowdown_seconds : 0;
}

// The copies each save makes: the model's, or the shared storage's alone.
std::vector<TierCopy> copies_of(const RunModel& m) {
  if (!m.copies.empty()) return m.copies;
  return {TierCopy{Tier::shared, 0, m.checkpoint_read_seconds, 1}};
}

// Where a failure-free run's clock is after its first `steps` steps (before
// the checkpoint after the last of them), computed as Run computes it.
double clock_after(const RunModel& m, double steps) {
  const double every = static_cast<double>(m.checkpoint_every_steps);
  if (every <= 0) return steps * m.step_seconds;
  const double intervals = std::floor((steps - 1) / every);
  return intervals * (every * m.step_seconds + save_seconds(m)) + (steps - intervals * every) * m.step_seconds;
}

class Run {
  // A completed save: the steps it holds, when each copy became readable
  // (never: not made, or abandoned), and the run's counters then, to go
  // back to.
  struct Saved {
    int64_t step = 0;
    std::vector<double> ready_at;  // per copy
    double checkpoint_seconds = 0, persist_seconds = 0, degraded_seconds = 0;
  };

public:
  Run(const RunModel& model, uint64_t seed, bool record, const RunProgress& on_progress)
      : m_(model), draws_(model.sources, seed), record_(record), on_progress_(on_progress),
        limit_(model.wall_limit_seconds > 0 ? model.wall_limit_seconds : never),
        interval_seconds_(model.checkpoint_every_steps * model.step_seconds + checkpoint_write_seconds(model)),
        copies_(copies_of(model)), spares_(model.reliability.spare_nodes) {
    saved_.push_back({0, std::vector<double>(copies_.size(), 0.0), 0, 0, 0});  // the start: nothing to lose before it
    scheduled_ = m_.scheduled;
    std::stable_sort(scheduled_.begin(), scheduled_.end(), [](auto& a, auto& b) { return a.first < b.first; });
    next_random_ = draws_.next_after(0);
  }

  RunResult run() {
    while (committed_ < m_.steps) {
      report_progress();
      const double persist_extra = std::min(persist_left_, std::max(0.0, m_.persist_step_seconds - m_.step_seconds));
      const double step = (now() < degraded_until_ ? m_.degraded_step_seconds : m_.step_seconds) + persist_extra;
      if (segment_end(1, step - m_.step_seconds) + checkpoint_write_seconds(m_) > limit_) {
        if (done_ == committed_) break;
        save();  // the allocation ends before another step and its checkpoint
        continue;
      }
      if (next_failure() < now() + step) {
        fail();
        continue;
      }
      pending_degraded_ += step - persist_extra - m_.step_seconds;
      pending_persist_ += persist_extra;
      persist_left_ -= persist_extra;
      ++done_;
      if (done_ == m_.steps || (m_.checkpoint_every_steps > 0 && done_ % m_.checkpoint_every_steps == 0)) save();
    }
    r_.wall_seconds = now();
    r_.steps = committed_;
    r_.useful_seconds = committed_ * m_.step_seconds;
    r_.cost = m_.gpus * r_.wall_seconds / 3600 * m_.price_per_gpu_hour;
    return std::move(r_);
  }

private:
  // The clock. A segment of steps starts at a checkpoint or a restart: at
  // `anchor_` plus whole checkpoint intervals, all alike, since the last
  // restart or irregular segment. Products, not a running sum: a
  // failure-free run's times are those steps_within computes.
  void start_segment_at(double seconds) {
    anchor_ = segment_start_ = seconds;
    regular_intervals_ = 0;
  }
  void start_next_interval() {
    ++regular_intervals_;
    segment_start_ = anchor_ + static_cast<double>(regular_intervals_) * interval_seconds_;
  }
  // The time once the steps trained since the segment started, and
  // `more_steps` nominal ones and `more_seconds` after them, are done.
  double segment_end(int64_t more_steps, double more_seconds) const {
    return segment_start_ + static_cast<double>(done_ - committed_ + more_steps) * m_.step_seconds + pending_degraded_ +
           pending_persist_ + more_seconds;
  }
  double now() const { return segment_end(0, 0); }

  void report_progress() {
    if (on_progress_ && ++tried_ % progress_every_steps == 0) on_progress_(now());
  }

  double next_failure() const {
    return std::min(next_random_, next_scheduled_ < scheduled_.size() ? scheduled_[next_scheduled_].first : never);
  }

  void note(const std::string& kind, double start, double end, const std::string& detail) {
    if (record_ && end >= start) r_.events.push_back({kind, start, end, detail});
  }

  // Keeps the steps trained since the last checkpoint: writes one (unless a
  // failure interrupts its blocking part), or, without checkpoints, counts
  // them as they are. Its background copies become readable later.
  void save() {
    const double end = now();
    const double write = checkpoint_write_seconds(m_);
    if (write > 0 && next_failure() < end + write) {  // the write never completes: the old checkpoint stays
      fail();
      return;
    }
    note("train", segment_start_, end, std::to_string(done_) + " steps done");
    const bool saving = m_.checkpoint_every_steps > 0;
    if (saving) {
      note("checkpoint", end, end + write, "step " + std::to_string(done_));
      r_.checkpoint_seconds += write;
      r_.checkpoints += 1;
    }
    // Without a background copy, the clock runs in whole regular intervals.
    const bool regular =
        done_ - committed_ == m_.checkpoint_every_steps && pending_degraded_ == 0 && pending_persist_ == 0;
    r_.degraded_seconds += pending_degraded_;
    r_.persist_seconds += pending_persist_;
    pending_degraded_ = pending_persist_ = 0;
    committed_ = done_;
    if (saving) record_save(end + write);
    if (regular)
      start_next_interval();
    else
      start_segment_at(end + write);
  }

  // A completed save: where its copies are and when each is readable.
  void record_save(double blocking_end) {
    ++saves_;
    Saved saved{committed_, {}, r_.checkpoint_seconds, r_.persist_seconds, r_.degraded_seconds};
    for (const TierCopy& copy : copies_) {
      const bool reached = saves_ % copy.every_saves == 0;
      saved.ready_at.push_back(reached ? blocking_end + copy.ready_seconds : never);
      if (reached && copy.ready_seconds > 0)
        note("persist", blocking_end, blocking_end + copy.ready_seconds, to_string(copy.tier) + ", step " + std::to_string(committed_));
    }
    persist_left_ = m_.persist_slowdown_seconds;
    saved_.push_back(std::move(saved));
    // Older saves than the newest one that no failure can take are never read again.
    for (size_t k = saved_.size() - 1; k > 0; --k)
      if (survives_any_failure(saved_[k], blocking_end)) {
        saved_.erase(saved_.begin(), saved_.begin() + static_cast<std::ptrdiff_t>(k));
        break;
      }
  }

  bool survives_any_failure(const Saved& saved, double at) const {
    for (size_t i = 0; i < copies_.size(); ++i)
      if (!lost_with_node(copies_[i].tier) && saved.ready_at[i] <= at) return true;
    return false;
  }

  // When a replacement is there: a spare node if one is free, else the repair.
  double replacement_ready(double failed_at, Component component) {
    while (!returning_.empty() && returning_.top() <= failed_at) returning_.pop(), ++spares_;
    const double repaired = failed_at + m_.reliability.repair_hours * 3600;
    if (component == Component::switch_ || spares_ == 0) return repaired;
    --spares_;
    returning_.push(repaired);  // the failed node joins the spares once repaired
    return failed_at;
  }

  void fail() {
    const double at = next_failure();
    FailureSource source;
    if (next_scheduled_ < scheduled_.size() && scheduled_[next_scheduled_].first <= next_random_) {
      source = scheduled_[next_scheduled_++].second;
    } else {
      source = draws_.source();
      next_random_ = draws_.next_after(at);
    }
    r_.failures[to_string(source.component)] += 1;
    note("failure", at, at, to_string(source.component) + (source.stops_job ? "" : " (redundant: degraded)"));
    if (!source.stops_job) {
      degraded_until_ = std::max(degraded_until_, at + m_.reliability.repair_hours * 3600);
      return;
    }
    // The newest save still readable, from the nearest tier holding it: a
    // replaced node's host memory and local disk are gone, and copies still
    // on their way are abandoned.
    const bool node_replaced = source.component != Component::switch_;
    size_t restored = 0, tier = copies_.size() - 1;  // the start, from the farthest tier, if nothing newer is left
    bool found = false;
    for (size_t k = saved_.size(); k-- > 0 && !found;)
      for (size_t i = 0; i < copies_.size(); ++i) {
        if (saved_[k].ready_at[i] > at) saved_[k].ready_at[i] = never;
        if (found || saved_[k].ready_at[i] == never || (node_replaced && lost_with_node(copies_[i].tier))) continue;
        restored = k, tier = i, found = true;
      }
    const Saved& from = saved_[restored];
    double lost = at - segment_start_;
    if (restored + 1 < saved_.size()) {  // back past saves this failure took: their steps and costs are lost too
      lost += static_cast<double>(committed_ - from.step) * m_.step_seconds + (r_.checkpoint_seconds - from.checkpoint_seconds) +
              (r_.persist_seconds - from.persist_seconds) + (r_.degraded_seconds - from.degraded_seconds);
      r_.checkpoint_seconds = from.checkpoint_seconds;
      r_.persist_seconds = from.persist_seconds;
      r_.degraded_seconds = from.degraded_seconds;
      committed_ = from.step;
      saved_.resize(restored + 1);
    }
    note("lost", at - lost, at, "work since the checkpoint of step " + std::to_string(from.step));
    r_.lost_seconds += lost;
    pending_degraded_ = pending_persist_ = persist_left_ = 0;  // inside the lost time
    const ReliabilityConfig& rel = m_.reliability;
    const double rescheduled = at + rel.detection_seconds + rel.reschedule_seconds;
    // A job still down when its allocation ends stays down.
    const double resumed = std::min(limit_, std::max(rescheduled, replacement_ready(at, source.component)) +
                                                copies_[tier].read_seconds);
    const std::string where = to_string(copies_[tier].tier);
    note("restart", at, resumed, "detect, reschedule, wait for a replacement, load the checkpoint from " + where);
    r_.restart_seconds += resumed - at;
    r_.restarts += 1;
    r_.restores[where] += 1;
    r_.restore_seconds[where] += resumed - at;
    r_.restore_lost_seconds[where] += lost;
    start_segment_at(resumed);
    done_ = committed_;
    // Failures while the job was down do not hit it again.
    if (next_random_ < resumed) next_random_ = draws_.next_after(resumed);
    while (next_scheduled_ < scheduled_.size() && scheduled_[next_scheduled_].first < resumed) ++next_scheduled_;
  }

  const RunModel& m_;
  FailureDraws draws_;
  const bool record_;
  const RunProgress& on_progress_;
  const double limit_;
  // checkpoint_every_steps steps and a save's blocking part (a save's slowed
  // steps make the next interval irregular).
  const double interval_seconds_;
  const std::vector<TierCopy> copies_;
  std::vector<Saved> saved_;  // oldest first; the first always survives any failure
  int64_t saves_ = 0;
  double pending_persist_ = 0, persist_left_ = 0;
  RunResult r_;
  double next_random_ = never;
  std::vector<std::pair<double, FailureSource>> scheduled_;
  size_t next_scheduled_ = 0;
  double anchor_ = 0, segment_start_ = 0, degraded_until_ = -1, pending_degraded_ = 0;
  int64_t regular_intervals_ = 0, done_ = 0, committed_ = 0;
  uint64_t tried_ = 0;
  int64_t spares_;
  std::priority_queue<double, std::vector<double>, std::greater<>> returning_;
};

}  // namespace

RunResult simulate_run(const RunModel& model, uint64_t seed, bool record_events, const RunProgress& on_progress) {
  return Run(model, seed, record_events, on_progress).run();
}

double steps_within(const RunModel& m, double seconds) {
  if (!(m.step_seconds > 0)) return never;
  const double every = static_cast<double>(m.checkpoint_every_steps), write = checkpoint_write_seconds(m);
  double intervals = 0, rest = seconds;  // whole checkpoint intervals, then the time left for a last, shorter one
  if (every > 0) {
    const double interval = every * m.step_seconds + save_seconds(m);
    intervals = std::floor(seconds / interval);
    rest = seconds - intervals * interval;
  }
  const double last = std::clamp(std::floor((rest - write) / m.step_seconds), 0.0, every > 0 ? every : never);
  double steps = intervals * std::max(every, 0.0) + last;
  if (!(steps < 0x1p52)) return steps;  // beyond counting, and beyond any run
  // Rounding may put the estimate a step off what the run's clock allows.
  auto fits = [&](double n) { return clock_after(m, n) + write <= seconds; };
  while (steps > 0 && !fits(steps)) --steps;
  while (fits(steps + 1)) ++steps;
  return steps;
}

double failure_free_seconds(const RunModel& m) {
  const double checkpoints =
      m.checkpoint_every_steps > 0 ? std::ceil(static_cast<double>(m.steps) / m.checkpoint_every_steps) : 0;
  // The last save's background copies slow no step: none follows.
  return m.steps * m.step_seconds + checkpoints * m.checkpoint_write_seconds +
         std::max(0.0, checkpoints - 1) * m.persist_slowdown_seconds;
}

double expected_events(const RunModel& m) {
  double rate = 0, stopping_rate = 0;
  for (const FailureSource& s : m.sources) {
    rate += s.rate_per_second;
    if (s.stops_job) stopping_rate += s.rate_per_second;
  }
  const int64_t every = m.checkpoint_every_steps > 0 ? std::min(m.checkpoint_every_steps, m.steps) : m.steps;
  const double interval = every * m.step_seconds + save_seconds(m);
  // A checkpoint interval is tried until no failure stops it: exp(rate x interval) times on average.
  double steps_tried = m.steps * std::exp(stopping_rate * interval);
  if (m.wall_limit_seconds > 0) steps_tried = std::min(steps_tried, m.wall_limit_seconds / m.step_seconds);
  // Failures come at `rate` over the time those steps take.
  return steps_tried * (1 + rate * m.step_seconds) + static_cast<double>(m.scheduled.size());
}

}  // namespace simtrain
