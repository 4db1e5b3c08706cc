#include "training_run.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <random>

namespace simtrain {

namespace {

constexpr double never = std::numeric_limits<double>::infinity();

class Run {
public:
  Run(const RunModel& model, uint64_t seed, bool record)
      : m_(model), random_(seed), record_(record), spares_(model.reliability.spare_nodes) {
    for (const FailureSource& s : m_.sources) total_rate_ += s.rate_per_second;
    scheduled_ = m_.scheduled;
    std::stable_sort(scheduled_.begin(), scheduled_.end(), [](auto& a, auto& b) { return a.first < b.first; });
    next_random_ = draw_after(0);
  }

  RunResult run() {
    const double limit = m_.wall_limit_seconds > 0 ? m_.wall_limit_seconds : never;
    while (committed_ < m_.steps && t_ < limit) {
      const bool degraded = t_ < degraded_until_;
      const double step = degraded ? m_.degraded_step_seconds : m_.step_seconds;
      if (next_failure() < t_ + step) {
        fail();
        continue;
      }
      t_ += step;
      ++done_;
      if (degraded) pending_degraded_ += step - m_.step_seconds;
      if (done_ % m_.checkpoint_every_steps != 0 && done_ < m_.steps) continue;
      if (next_failure() < t_ + m_.checkpoint_write_seconds) {  // the write never completes: the old checkpoint stays
        fail();
        continue;
      }
      note("train", segment_start_, t_, std::to_string(done_) + " steps done");
      note("checkpoint", t_, t_ + m_.checkpoint_write_seconds, "step " + std::to_string(done_));
      t_ += m_.checkpoint_write_seconds;
      r_.checkpoint_seconds += m_.checkpoint_write_seconds;
      r_.checkpoints += 1;
      r_.degraded_seconds += pending_degraded_;
      pending_degraded_ = 0;
      committed_ = done_;
      segment_start_ = t_;
    }
    r_.wall_seconds = t_;
    r_.steps = committed_;
    r_.useful_seconds = committed_ * m_.step_seconds;
    r_.cost = m_.gpus * t_ / 3600 * m_.price_per_gpu_hour;
    return std::move(r_);
  }

private:
  // Exponential inter-arrival times, drawn the same way on every platform.
  double draw_after(double from) {
    if (total_rate_ <= 0) return never;
    const double u = static_cast<double>(random_() >> 11) * 0x1.0p-53;
    return from - std::log1p(-u) / total_rate_;
  }

  const FailureSource& draw_source() {
    double u = static_cast<double>(random_() >> 11) * 0x1.0p-53 * total_rate_;
    for (const FailureSource& s : m_.sources)
      if ((u -= s.rate_per_second) < 0) return s;
    return m_.sources.back();
  }

  double next_failure() const {
    return std::min(next_random_, next_scheduled_ < scheduled_.size() ? scheduled_[next_scheduled_].first : never);
  }

  void note(const std::string& kind, double start, double end, const std::string& detail) {
    if (record_ && end >= start) r_.events.push_back({kind, start, end, detail});
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
      source = draw_source();
      next_random_ = draw_after(at);
    }
    r_.failures[to_string(source.component)] += 1;
    note("failure", at, at, to_string(source.component) + (source.stops_job ? "" : " (redundant: degraded)"));
    if (!source.stops_job) {
      degraded_until_ = std::max(degraded_until_, at + m_.reliability.repair_hours * 3600);
      return;
    }
    note("lost", segment_start_, at, "work since the last checkpoint");
    r_.lost_seconds += at - segment_start_;
    pending_degraded_ = 0;  // inside the lost time
    const ReliabilityConfig& rel = m_.reliability;
    const double rescheduled = at + rel.detection_seconds + rel.reschedule_seconds;
    const double resumed = std::max(rescheduled, replacement_ready(at, source.component)) + m_.checkpoint_read_seconds;
    note("restart", at, resumed, "detect, reschedule, wait for a replacement, load the checkpoint");
    r_.restart_seconds += resumed - at;
    r_.restarts += 1;
    t_ = segment_start_ = resumed;
    done_ = committed_;
    // Failures while the job was down do not hit it again.
    if (next_random_ < t_) next_random_ = draw_after(t_);
    while (next_scheduled_ < scheduled_.size() && scheduled_[next_scheduled_].first < t_) ++next_scheduled_;
  }

  const RunModel& m_;
  std::mt19937_64 random_;
  const bool record_;
  RunResult r_;
  double total_rate_ = 0, next_random_ = never;
  std::vector<std::pair<double, FailureSource>> scheduled_;
  size_t next_scheduled_ = 0;
  double t_ = 0, segment_start_ = 0, degraded_until_ = -1, pending_degraded_ = 0;
  int64_t done_ = 0, committed_ = 0;
  int64_t spares_;
  std::priority_queue<double, std::vector<double>, std::greater<>> returning_;
};

}  // namespace

RunResult simulate_run(const RunModel& model, uint64_t seed, bool record_events) {
  return Run(model, seed, record_events).run();
}

}  // namespace simtrain
