#include "sim/longrun/checkpoint_policy.hpp"

#include <algorithm>
#include <cmath>

#include "sim/base/text_format.hpp"

namespace simtrain {

SaveSchedule schedule_saves(RunModel& m, const CheckpointConfig& c, const CheckpointCost& cost,
                            const PersistInterference& interference, double stop_mtbf_seconds, bool scheduled_stops,
                            double interval_factor) {
  auto save_cost = [&](const SavePhases& phases) {
    return SaveCost{phases.blocking_seconds,
                    persist_slowdown_seconds(interference, phases.shared_seconds_per_save, phases.peer_seconds_per_save,
                                             m.step_seconds),
                    phases.background_seconds()};
  };
  CheckpointConfig full = c;
  full.incremental.full_every = 1;
  SaveSchedule schedule;
  const double shared_stretch = interference.shared.stretch, peer_stretch = interference.peers.stretch;
  schedule.phases = save_phases(full, cost, 1, shared_stretch, peer_stretch);
  schedule.interval = choose_checkpoint_interval(c, m.step_seconds, save_cost(schedule.phases), stop_mtbf_seconds,
                                                 scheduled_stops);
  CheckpointInterval& interval = schedule.interval;
  const bool periodic = interval.every_steps > 0 && interval.every_steps != checkpoint_at_the_end;
  if (periodic && interval_factor != 1) {
    interval.every_steps = std::max<int64_t>(1, std::llround(interval.every_steps * interval_factor));
    interval.rule += format(", x %g", interval_factor);
  }
  if (c.incremental.full_every > 1)
    schedule.phases = save_phases(c, cost, periodic ? interval.every_steps : 1, shared_stretch, peer_stretch);
  const SaveCost save = save_cost(schedule.phases);
  // A save waits for the one before to be everywhere.
  const double wait =
      periodic ? std::max(0.0, save.background_seconds - static_cast<double>(interval.every_steps) * m.step_seconds) : 0;
  m.checkpoint_every_steps = interval.every_steps;
  m.checkpoint_write_seconds = save.blocking_seconds + wait;
  m.checkpoint_read_seconds = schedule.phases.copies.back().read_seconds;
  m.copies = schedule.phases.copies;
  m.persist_slowdown_seconds = save.slowdown_seconds;
  m.persist_step_seconds = std::max(interference.shared.step_seconds, interference.peers.step_seconds);
  return schedule;
}

std::vector<PolicyResult> rank_checkpoint_policies(
    const RunModel& model, const CheckpointConfig& config, const CheckpointCost& cost, int nodes,
    double stop_mtbf_seconds, bool scheduled_stops, int runs,
    const std::function<PersistInterference(CheckpointMode, int64_t)>& interference_of) {
  struct Policy {
    CheckpointMode mode;
    int64_t peer_replicas, persist_every;
  };
  std::vector<Policy> policies = {{CheckpointMode::sync, 0, 1}, {CheckpointMode::async, 0, 1}};
  if (nodes >= 2) {
    const int64_t peers = std::max<int64_t>(1, config.peer_replicas);
    policies.push_back({CheckpointMode::in_memory, peers, 1});
    policies.push_back({CheckpointMode::in_memory, peers, 4});
  }
  std::vector<PolicyResult> results;
  for (const Policy& policy : policies) {
    CheckpointConfig c = config;
    c.mode = policy.mode;
    c.peer_replicas = policy.peer_replicas;
    c.persist_every = policy.persist_every;
    const PersistInterference interference = interference_of(policy.mode, policy.peer_replicas);
    for (double factor : {0.5, 1.0, 2.0}) {
      RunModel m = model;
      const SaveSchedule schedule = schedule_saves(m, c, cost, interference, stop_mtbf_seconds, scheduled_stops, factor);
      if (m.checkpoint_every_steps == checkpoint_at_the_end) m.checkpoint_every_steps = m.steps;
      PolicyResult r;
      r.mode = policy.mode;
      r.persist_every = policy.persist_every;
      r.interval_factor = factor;
      r.every_steps = m.checkpoint_every_steps;
      r.blocking_seconds = m.checkpoint_write_seconds;
      r.policy = to_string(policy.mode) +
                 (policy.persist_every > 1 ? ", shared storage every " + std::to_string(policy.persist_every) + " saves" : "") +
                 ", every " + with_commas(static_cast<double>(m.checkpoint_every_steps)) + " steps" +
                 format(" (optimum x %g)", factor);
      for (int k = 0; k < runs; ++k) {
        const RunResult run = simulate_run(m, m.reliability.seed + static_cast<uint64_t>(k));
        r.goodput += run.goodput() / runs;
        r.cost += run.cost / runs;
      }
      results.push_back(r);
    }
  }
  std::stable_sort(results.begin(), results.end(), [](const PolicyResult& a, const PolicyResult& b) {
    return a.goodput != b.goodput ? a.goodput > b.goodput : a.cost < b.cost;
  });
  return results;
}

}  // namespace simtrain
