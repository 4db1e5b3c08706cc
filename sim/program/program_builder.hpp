#pragma once
// Turns a scenario and its workload into a Program: the pipeline schedule's
// actions become compute tasks, with the tensor-parallel collectives of each
// pass, point-to-point transfers between stages, and data-parallel gradient
// synchronisation in buckets that overlap the last backward of each chunk,
// lowered in passes (sim/program/lowering.hpp).
#include "sim/model/workload.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

Program build_program(const Scenario& scenario, const Workload& workload);

}  // namespace simtrain
