#pragma once
// Checkpoint policies: a mode, its tiers and an interval, turned into what
// a training run's saves cost it (the run model's save fields), and a search
// over mode x interval x tiers ranked by the runs' goodput and cost.
#include <string>
#include <vector>

#include "sim/longrun/checkpoint_cost.hpp"
#include "sim/longrun/checkpoint_interval.hpp"
#include "sim/longrun/persist_interference.hpp"
#include "sim/longrun/save_phases.hpp"
#include "sim/longrun/training_run.hpp"

namespace simtrain {

struct SaveSchedule {
  SavePhases phases;
  CheckpointInterval interval;
};

// Sets `m`'s save fields (checkpoint_every_steps, the blocking write and a
// wait for the previous save's copies, the copies, the steps' slowdown)
// for `config` with `interference` (of this mode's background copies);
// the interval is sized with full saves, incremental ones then sized at it.
// `interval_factor` scales the interval the config or Daly's optimum gives.
SaveSchedule schedule_saves(RunModel& m, const CheckpointConfig& config, const CheckpointCost& cost,
                            const PersistInterference& interference, double stop_mtbf_seconds, bool scheduled_stops,
                            double interval_factor = 1);

struct PolicyResult {
  std::string policy;  // "async, every 340 steps (Daly's optimum x 0.5)"
  CheckpointMode mode = CheckpointMode::sync;
  int64_t persist_every = 1;
  double interval_factor = 1;
  int64_t every_steps = 0;
  double blocking_seconds = 0;
  double goodput = 0;  // mean over the runs
  double cost = 0;     // USD, mean
};

// Every mode (sync, async, in-memory with a peer replica where the job has
// two nodes or more; in-memory also reaching the shared storage every 4th
// save) at half, once and twice its optimum interval, over `runs` runs with
// the plan's seeds, best goodput first (cost breaks ties).
// `interference_of(mode, peer_replicas)` gives the background copies'
// effect for a mode (a step replay: the caller's to cache).
std::vector<PolicyResult> rank_checkpoint_policies(
    const RunModel& model, const CheckpointConfig& config, const CheckpointCost& cost, int nodes,
    double stop_mtbf_seconds, bool scheduled_stops, int runs,
    const std::function<PersistInterference(CheckpointMode, int64_t peer_replicas)>& interference_of);

}  // namespace simtrain
