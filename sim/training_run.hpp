#pragma once
// A whole training run at the granularity of steps: steps of the simulated
// length, checkpoints, failures drawn from component failure rates (and the
// scheduled ones), restarts from the last completed checkpoint.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "run_config.hpp"

namespace simtrain {

// A kind of failure and what it does to the job.
struct FailureSource {
  Component component = Component::gpu;
  double rate_per_second = 0;  // over the whole cluster
  bool stops_job = true;       // else it degrades the step (a redundant link) until repaired
};

struct RunModel {
  double step_seconds = 0;           // from the detailed step simulation
  double degraded_step_seconds = 0;  // while a redundant link is down
  double checkpoint_write_seconds = 0;
  double checkpoint_read_seconds = 0;
  int64_t steps = 0;                 // to train
  double wall_limit_seconds = 0;     // stop here even if steps remain (0: no limit)
  int64_t checkpoint_every_steps = 1;
  std::vector<FailureSource> sources;
  std::vector<std::pair<double, FailureSource>> scheduled;  // (time, what) known in advance
  ReliabilityConfig reliability;     // repair, spares, detection, rescheduling
  double gpus = 0;                   // billed, spares included
  double price_per_gpu_hour = 0;
};

// Something that happened during a run, for its timeline.
struct RunEvent {
  std::string kind;  // "train", "checkpoint", "failure", "restart", "lost"
  double start_seconds = 0;
  double end_seconds = 0;
  std::string detail;
};

struct RunResult {
  double wall_seconds = 0;
  double useful_seconds = 0;      // steps x nominal step time: what a perfect run would take
  int64_t steps = 0;              // completed and checkpointed
  double checkpoint_seconds = 0;  // completed checkpoint writes
  double lost_seconds = 0;        // work since the last checkpoint, and interrupted writes, thrown away
  double restart_seconds = 0;     // detection, rescheduling, waiting for repair, loading the checkpoint
  double degraded_seconds = 0;    // extra step time while a redundant link was down
  int64_t checkpoints = 0;
  int64_t restarts = 0;
  std::map<std::string, int64_t> failures;  // by component
  double cost = 0;                // USD
  std::vector<RunEvent> events;   // only when asked for

  double goodput() const { return useful_seconds / wall_seconds; }
};

// One run; `seed` draws its failures. The parts of the wall time add up:
// wall = useful + checkpoint + lost + restart + degraded (when the run ends
// on its steps; a wall-time limit can cut it between checkpoints).
RunResult simulate_run(const RunModel& model, uint64_t seed, bool record_events = false);

}  // namespace simtrain
