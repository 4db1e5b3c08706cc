#pragma once
// One training step the GUI shows: simulated from a scenario, or read back
// from a Chrome trace (simulated earlier, or recorded by a live run).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/replay.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/step/report.hpp"

namespace simtrain::gui {

struct StepResult {
  std::string title;                 // scenario name, or the trace's file name
  Program program;
  Timeline timeline;
  StepReport report;                 // a trace gives the timing figures only
  std::optional<Scenario> scenario;  // simulations only
  std::shared_ptr<const CostModel> cost_model;  // what timed the compute ops (simulations only)
  // What a trace says of itself (its otherData, its Program's shape), as label and value (traces only).
  std::vector<std::pair<std::string, std::string>> trace_facts;
};

StepResult simulate_step(const Scenario& scenario, const ReplayOptions& options);
// Throws InputError for a malformed trace.
StepResult read_trace_step(const std::string& path);

}  // namespace simtrain::gui
