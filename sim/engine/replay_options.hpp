#pragma once
// What a replay can be asked beyond the Program itself: a slower GPU, a
// degraded link, failures during the step, a fixed all-reduce algorithm,
// what overlapped collectives take from compute, the hosts that launch the
// kernels, progress reports and cancellation.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/base/child_process.hpp"  // Interrupted, which cancelling gives
#include "sim/engine/compute_interference.hpp"
#include "sim/engine/host_lane.hpp"
#include "sim/network/collective_algorithm.hpp"

namespace simtrain {

struct ReplayProgress {
  std::string replay;  // which one: "" the step's, else simulate()'s "sensitivity 1/2 (compute +10 %)", ...
  double simulated_seconds = 0;
  uint64_t tasks_done = 0;   // tasks executed by actors so far
  uint64_t tasks_total = 0;
};

// Something breaks during the step: a GPU (the job stops, as NCCL and the
// framework hang on it) or a link, whose bandwidth drops to a fraction of its
// nominal value (0: down; transfers that need it fail and the job stops).
struct FailureEvent {
  double at_seconds = 0;
  int rank = -1;            // the GPU that fails, or -1
  std::string link;         // else the link (fabric name)
  double bandwidth_factor = 0;
};

struct ReplayOptions {
  bool free_communication = false;  // communication takes no time (dependencies still hold)
  // simulate(): the hosts launch every kernel at no cost (leaves `host` unset),
  // what CUDA graphs over the whole step would come near.
  bool free_launches = false;
  // Run every data-parallel replica, not one per class of equivalent replicas
  // (sim/engine/replica_classes.hpp): slower, for checking the reduction.
  bool full_replay = false;
  // Send every collective's flows, none timed in closed form (a TP group's
  // whose links are its own, an exact all-to-all's): slower, for checking them.
  bool flow_level = false;
  // Rounds of colour refinement (at least 1) the reduction may take to tell
  // replicas apart; where differences still spread after them, replicas
  // alike that far form the classes (an approximation the report names).
  int max_refinement_rounds = 64;
  std::vector<double> gpu_speed_factors;                 // per rank (empty: all 1); a TP group runs at its slowest
  std::map<std::string, double> link_bandwidth_factors;  // fabric link name -> fraction of nominal bandwidth
  std::vector<FailureEvent> failures;
  std::optional<Algorithm> allreduce_algorithm;  // where the group fixes none; empty: NCCL-like choice
  // What collectives beside compute take from it (simulate() sets the
  // scenario's; the default, nothing, leaves compute at full speed).
  ComputeInterference interference;
  // Each rank's host thread launching its kernels (simulate() sets the
  // scenario's; the default, none, launches every kernel at no cost).
  HostModel host;
  // Called in the calling thread about four times a second while the replay's tasks run.
  std::function<void(const ReplayProgress&)> on_progress;
  // Called in the calling thread as each stage of the work begins, what it
  // does in words: simulate()'s "building the Program", the replay's
  // "setting up: ..." and "replaying the step" (then on_progress counts
  // the tasks), a sensitivity replay's "sensitivity 1/2 (compute +10 %): ...".
  std::function<void(const std::string& phase)> on_phase;
  // Setting it (from any thread) stops the simulation: replay throws Interrupted.
  const std::atomic<bool>* cancel = nullptr;
};

}  // namespace simtrain
