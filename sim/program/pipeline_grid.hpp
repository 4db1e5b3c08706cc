#pragma once
// The step x pipeline-rank grid of a schedule, as PyTorch pipelining's
// _format_pipeline_order prints it: one row per step, one column per pipeline
// rank, each cell the compute action the rank runs at that step, empty where
// it idles:
//
//           pp0 pp1 pp2 pp3
//   Step 00: F0
//   Step 01: F1  F0
//   Step 02: F2  F1  F0
//
// Every action takes one step and starts once its rank is free and its inputs
// exist (communication is free): F of a model stage needs F of the stage
// before it; B needs F of its stage and B of the stage after; W needs B of its
// stage (stages as PipelineStages places them). A DualPipe pair's halves end
// in "&" and take a step each.
#include <string>
#include <vector>

#include "sim/program/pipeline_schedule.hpp"

namespace simtrain {

// The grid of per-rank action lists (outer index: pipeline rank; chunks as in
// pipeline_schedule) over `stages`. Throws std::invalid_argument, showing the
// grid up to there, when at some step no rank can start its next action.
std::string format_pipeline_grid(const PipelineStages& stages, const std::vector<std::vector<PipelineAction>>& ranks);

}  // namespace simtrain
