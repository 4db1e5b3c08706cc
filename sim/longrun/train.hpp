#pragma once
// `simtrain train`: how long training N tokens really takes on a cluster that
// fails, with checkpoints and restarts, and what it costs.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/simulate.hpp"
#include "sim/longrun/checkpoint_policy.hpp"
#include "sim/longrun/training_run.hpp"

namespace simtrain {

// Simulated steps and failures beyond this, all runs together (steps redone
// after failures counted), are refused: a run loop goes through some 10^8 a
// second, so this is seconds of waiting, with progress shown; 90 days of
// tiny-4gpu's 8 ms steps, centuries of a large model's.
constexpr double max_simulated_events = 1e9;

struct TrainProgress {
  int runs_done = 0;
  int runs = 0;
  double simulated_seconds = 0;  // into the run under way
};

struct TrainRequest {
  double tokens = 0;   // one of these two; else training.train_tokens
  int64_t steps = 0;
  double days = 0;     // the wall-time limit; alone, the run trains all the steps that fit in it
  int runs = 0;        // seeds reliability.seed, +1, ...; 0: default_runs (fewer where max_simulated_events binds, 1 where nothing fails)
  bool no_failures = false;    // nothing fails: the ideal run
  bool ignore_memory = false;  // price a job even if it does not fit in its GPUs' memory
  bool checkpoint_policies = false;  // also rank other checkpoint policies (checkpoint_policy.hpp)
  // replay.cancel (set from any thread) and Ctrl-C stop the step simulations
  // and the runs alike: plan_training throws Interrupted.
  ReplayOptions replay;
  // Called in the calling thread at most about four times a second while the runs are simulated.
  std::function<void(const TrainProgress&)> on_progress;
};

// Runs per policy when request.checkpoint_policies ranks them.
constexpr int policy_runs = 5;

// Runs with consecutive seeds when the request names no number: enough for
// the 10th and 90th percentiles to fall on different runs.
constexpr int default_runs = 20;

struct TrainPlan {
  Simulation step;                    // the detailed single-step simulation
  std::string failure_rates;          // where the failure rates come from
  RunModel model;
  double checkpoint_bytes = 0;        // whole checkpoint
  CheckpointMode checkpoint_mode = CheckpointMode::sync;
  SavePhases phases;                  // one save's phases, tier by tier
  PersistInterference interference;   // the background copies beside the steps
  double stop_mtbf_seconds = 0;       // mean time between failures that stop the job (0: none)
  std::string interval_rule;          // how the checkpoint interval was chosen
  std::string steps_rule;             // what set the number of steps
  bool steps_fill_days = false;       // --days did: all that fit without failures
  std::vector<RunResult> runs;        // the first one with its event timeline
  std::vector<PolicyResult> policies;  // with request.checkpoint_policies, best first
};

// Simulates a step (and the degraded step when a redundant link can fail),
// the checkpoint's writes and reads per tier through the storage model, for
// an async or in-memory mode the step beside its background copies, then
// the runs.
// A scenario that states no failure rates fails at published ones
// (sim/longrun/published_failure_rates.hpp) unless request.no_failures.
// Throws InputError for a job that does not fit in its GPUs' memory (unless
// request.ignore_memory), for a request that does not fit the scenario, or
// that would simulate more than max_simulated_events (before the step
// simulation when the number of steps is known without it).
TrainPlan plan_training(const Scenario& scenario, const TrainRequest& request);

nlohmann::json to_json(const TrainPlan& plan);
std::string to_text(const TrainPlan& plan);
// The first run's timeline: training, checkpoints, failures, restarts.
void write_run_trace(std::ostream& out, const RunResult& run);

}  // namespace simtrain
