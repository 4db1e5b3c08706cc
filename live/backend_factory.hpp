#pragma once
// The backends this build has: "host" with MPI, "cuda" with CUDA and NCCL.
#include <memory>
#include <string>

#include "backend.hpp"
#include "process_world.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// Throws InputError naming --backend when `name` is unknown or not built in.
std::unique_ptr<Backend> make_backend(const std::string& name, ProcessWorld& world, const Scenario& scenario);

// Stops whatever the backend's communication waits on, before the process
// exits after a stall (NCCL communicators must be aborted, MPI needs nothing).
void abort_communication(Backend& backend);

}  // namespace simtrain
