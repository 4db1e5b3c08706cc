#pragma once
// A whole training run at the granularity of steps: steps of the simulated
// length, checkpoints, failures drawn from component failure rates (and the
// scheduled ones; see failure_sources.hpp), restarts from the last completed
// checkpoint.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/longrun/failure_sources.hpp"
#include "sim/scenario/run_config.hpp"

namespace simtrain {

// Where a checkpoint is kept, nearest first: what a restore reads it from.
enum class Tier { host_memory, peer_memory, local_disk, shared };
std::string to_string(Tier tier);
// A node's own host memory and local disk go with the node when it is
// replaced; a peer's host memory and the shared storage survive it.
bool lost_with_node(Tier tier);

// One place every n-th save reaches.
struct TierCopy {
  Tier tier = Tier::shared;
  double ready_seconds = 0;  // after the save's blocking part ends (0: that part wrote it)
  double read_seconds = 0;   // restoring from it
  int64_t every_saves = 1;
};

struct RunModel {
  double step_seconds = 0;           // from the detailed step simulation
  double degraded_step_seconds = 0;  // while a redundant link is down
  double checkpoint_write_seconds = 0;  // the part of a save that stops training
  double checkpoint_read_seconds = 0;   // a restore from the shared storage, where `copies` is empty
  // Where each save lands; empty: only on the shared storage, by the blocking write.
  std::vector<TierCopy> copies;
  // The background copies' traffic slows the steps after a save: by this
  // much in all, no step by more than persist_step_seconds - step_seconds.
  double persist_slowdown_seconds = 0;
  double persist_step_seconds = 0;
  int64_t steps = 0;                 // to train
  // The end of the job's allocation (0: none). A step starts only if it and
  // the checkpoint after it end by then: the job saves what it trained since
  // its last checkpoint before the limit, as frameworks with a time limit do.
  double wall_limit_seconds = 0;
  // A checkpoint after every this many steps and after the last one; 0: none
  // at all, for a job that nothing stops (a failure would lose everything).
  int64_t checkpoint_every_steps = 1;
  std::vector<FailureSource> sources;
  std::vector<std::pair<double, FailureSource>> scheduled;  // (time, what) known in advance
  ReliabilityConfig reliability;     // repair, spares, detection, rescheduling
  double gpus = 0;                   // billed, spares included
  double price_per_gpu_hour = 0;
  std::string default_price_gpu;     // the GPU whose rental price it is, where the scenario states none
};

// Something that happened during a run, for its timeline.
struct RunEvent {
  std::string kind;  // "train", "checkpoint", "persist", "failure", "restart", "lost"
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
  double persist_seconds = 0;     // extra step time while background checkpoint copies crossed the NICs
  int64_t checkpoints = 0;
  int64_t restarts = 0;
  std::map<std::string, int64_t> failures;  // by component
  // Restarts by the tier they restored from, and the time each cost:
  // the restart itself and the work thrown away.
  std::map<std::string, int64_t> restores;
  std::map<std::string, double> restore_seconds, restore_lost_seconds;
  double cost = 0;                // USD
  std::vector<RunEvent> events;   // only when asked for

  double goodput() const { return wall_seconds > 0 ? useful_seconds / wall_seconds : 0; }
};

// Called now and then while a run is simulated (every 2^20 steps tried), with its simulated time so far.
using RunProgress = std::function<void(double simulated_seconds)>;

// One run; `seed` draws its failures. The parts of the wall time add up:
// wall = useful + checkpoint + persist + lost + restart + degraded.
RunResult simulate_run(const RunModel& model, uint64_t seed, bool record_events = false,
                       const RunProgress& on_progress = {});

// The most steps that fit in `seconds` with the checkpoints they need, without
// failures, compared as simulate_run compares them; `model.steps` plays no part.
// A double: it may exceed what a run can count.
double steps_within(const RunModel& model, double seconds);

// A run of `model.steps` without failures: the steps and their checkpoint writes.
double failure_free_seconds(const RunModel& model);

// About how many steps (those redone after failures included) and failures
// simulate_run goes through on average: its cost. Infinite when failures
// leave a checkpoint interval no chance to complete.
double expected_events(const RunModel& model);

}  // namespace simtrain
