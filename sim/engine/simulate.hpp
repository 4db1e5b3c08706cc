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

// Whether simulate also replays the step with every compute task 10 % longer
// and with every link at half its bandwidth (StepReport::sensitivity).
enum class SensitivityReplays { none, automatic, always };
// `automatic` replays Programs of at most this many tasks whose replay sent
// at most this many flows (two more replays of a larger one take seconds, or
// minutes: a flow costs SimGrid microseconds) and says it skipped the others.
inline constexpr size_t kSensitivityTaskLimit = 4'000'000;
inline constexpr uint64_t kSensitivityFlowLimit = 2'000'000;

Simulation simulate(const Scenario& scenario, const ReplayOptions& options = {},
                    SensitivityReplays sensitivity = SensitivityReplays::none);

// Throws InputError (naming `file`) for a degraded or failing link the fabric does not have.
void check_link_names(const Fabric& fabric, const ReplayOptions& options, const std::string& file);

// Seconds of each Program work under `cost_model` (indexed like program.works).
std::vector<double> work_durations(const Program& program, const CostModel& cost_model, Dtype dtype);

}  // namespace simtrain
