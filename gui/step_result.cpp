#include "step_result.hpp"

#include <filesystem>

#include "sim/engine/simulate.hpp"
#include "sim/program/trace_reader.hpp"

namespace simtrain::gui {

StepResult simulate_step(const Scenario& scenario, const ReplayOptions& options) {
  Simulation sim = simulate(scenario, options);
  return {scenario.name, std::move(sim.program), std::move(sim.timeline), std::move(sim.report), scenario};
}

StepResult read_trace_step(const std::string& path) {
  RecordedStep step = read_chrome_trace_file(path);
  StepResult result{std::filesystem::path(path).filename().string(), std::move(step.program),
                    std::move(step.timeline), {}, std::nullopt};
  result.report = timing_report(result.program, result.timeline);
  result.report.scenario_name = result.title;
  return result;
}

}  // namespace simtrain::gui
