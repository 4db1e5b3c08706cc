#pragma once
// Replays a Program on a SimGrid model of the cluster and returns when each
// task started and ended.
//
// Actors: one per tensor-parallel group and stream. The ranks of a TP group
// run in lockstep (every layer ends in a TP collective), so one actor stands
// for all of them and drives each member GPU's own flows: point-to-point and
// data-parallel traffic still leaves every GPU over its own NIC, so
// contention is modelled per GPU. With TP = 1 this is one actor per rank.
#include <stdexcept>
#include <string>
#include <vector>

#include "../collective_plan.hpp"
#include "../fabric.hpp"
#include "../program.hpp"
#include "../timeline.hpp"

namespace simtrain {

struct ReplayOptions {
  bool free_communication = false;  // communication takes no time (dependencies still hold)
  bool show_progress = false;       // simulated time and tasks done on stderr
  std::string allreduce_algorithm = "auto";  // auto (NCCL-like choice), ring, tree
};

// Runs the simulation in a child process (SimGrid keeps global state that a
// second simulation in the same process would inherit). `work_seconds` is the
// duration of each Program work. Throws std::runtime_error if the simulation
// fails, Interrupted on SIGINT.
Timeline replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
                const ReplayOptions& options);

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

}  // namespace simtrain
