#pragma once
// One simulated training step, end to end: scenario -> workload -> Program ->
// SimGrid replay -> report.
#include "sim/engine/replay.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/workload.hpp"
#include "sim/network/fabric.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/step/report.hpp"

namespace simtrain {

struct Simulation {
  Workload workload;
  Program program;
  Timeline timeline;
  StepReport report;
};

Simulation simulate(const Scenario& scenario, const ReplayOptions& options = {});

// Throws InputError (naming `file`) for a degraded or failing link the fabric does not have.
void check_link_names(const Fabric& fabric, const ReplayOptions& options, const std::string& file);

// Seconds of each Program work under `cost_model` (indexed like program.works).
std::vector<double> work_durations(const Program& program, const CostModel& cost_model, Dtype dtype);

}  // namespace simtrain
