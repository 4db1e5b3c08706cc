#pragma once
// Replays a Program on a SimGrid model of the cluster and returns when each
// task started and ended.
//
// Actors: one per tensor-parallel group and stream. The ranks of a TP group
// run in lockstep (every layer ends in a TP collective), so one actor stands
// for all of them and drives each member GPU's own flows: point-to-point and
// data-parallel traffic still leaves every GPU over its own NIC, so
// contention is modelled per GPU. With TP = 1 this is one actor per rank.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/network/collective_plan.hpp"
#include "sim/base/child_process.hpp"
#include "sim/network/fabric.hpp"
#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"

namespace simtrain {

struct ReplayProgress {
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
  std::vector<double> gpu_speed_factors;                 // per rank (empty: all 1); a TP group runs at its slowest
  std::map<std::string, double> link_bandwidth_factors;  // fabric link name -> fraction of nominal bandwidth
  std::vector<FailureEvent> failures;
  std::optional<Algorithm> allreduce_algorithm;  // where the group fixes none; empty: NCCL-like choice
  // Called in the calling thread about four times a second while it runs.
  std::function<void(const ReplayProgress&)> on_progress;
  // Setting it (from any thread) stops the simulation: replay throws Interrupted.
  const std::atomic<bool>* cancel = nullptr;
};

// Runs the simulation in a child process (SimGrid keeps global state that a
// second simulation in the same process would inherit). `work_seconds` is the
// duration of each Program work. Throws std::runtime_error if the simulation
// fails, Interrupted on SIGINT or cancel.
Timeline replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
                const ReplayOptions& options);

}  // namespace simtrain
