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

struct ProgramBuildOptions {
  // Lower every rank, rather than the first rank of each pipeline coordinate
  // and the others as translations of its list (sim/program/rank_translation.hpp):
  // the same Program, slower; for checking.
  bool lower_every_rank = false;
  // Store every rank's list, the translated ones too, rather than the lowered
  // ones only (sim/program/task_table.hpp): the same Program, larger; for checking.
  bool store_every_rank = false;
};

Program build_program(const Scenario& scenario, const Workload& workload, ProgramBuildOptions options = {});

}  // namespace simtrain
