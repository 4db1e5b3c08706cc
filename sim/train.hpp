#pragma once
// `simtrain train`: how long training N tokens really takes on a cluster that
// fails, with checkpoints and restarts, and what it costs.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulation.hpp"
#include "training_run.hpp"

namespace simtrain {

struct TrainRequest {
  double tokens = 0;   // one of these three; else training.train_tokens
  int64_t steps = 0;
  double days = 0;
  int runs = 1;        // seeds reliability.seed, +1, ...
  ReplayOptions replay;
};

struct TrainPlan {
  Simulation step;                    // the detailed single-step simulation
  RunModel model;
  double checkpoint_bytes = 0;        // whole checkpoint
  double stop_mtbf_seconds = 0;       // mean time between failures that stop the job (0: none)
  std::string interval_rule;          // how the checkpoint interval was chosen
  std::vector<RunResult> runs;        // the first one with its event timeline
};

// Simulates a step (and the degraded step when a redundant link can fail),
// the checkpoint write and read through the storage model, then the runs.
// Throws InputError for a request that does not fit the scenario.
TrainPlan plan_training(const Scenario& scenario, const TrainRequest& request);

nlohmann::json to_json(const TrainPlan& plan);
std::string to_text(const TrainPlan& plan);
// The first run's timeline: training, checkpoints, failures, restarts.
void write_run_trace(std::ostream& out, const RunResult& run);

}  // namespace simtrain
