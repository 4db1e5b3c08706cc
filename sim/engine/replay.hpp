#pragma once
// Replays a Program on a SimGrid model of the cluster and returns when each
// task started and ended.
//
// Actors: one per lane (a tensor-parallel group, see replay_lanes.hpp) and
// stream, and a failure injector when the options name failures. The ranks
// of a TP group run in lockstep, so one actor stands for all of them and
// drives each member GPU's own flows: point-to-point and data-parallel
// traffic still leaves every GPU over its own NIC, so contention is modelled
// per GPU. With TP = 1 this is one actor per rank.
#include <vector>

#include "sim/engine/replay_options.hpp"
#include "sim/network/fabric.hpp"
#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"

namespace simtrain {

// Runs the simulation in a child process (SimGrid keeps global state that a
// second simulation in the same process would inherit). `work_seconds` is the
// duration of each Program work. Throws std::runtime_error if the simulation
// fails, Interrupted on SIGINT or cancel.
Timeline replay(const Program& program, const Fabric& fabric, const std::vector<double>& work_seconds,
                const ReplayOptions& options);

}  // namespace simtrain
