#include "step_result.hpp"

#include <filesystem>

#include "sim/engine/simulate.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/trace_reader.hpp"

namespace simtrain::gui {

StepResult simulate_step(const Scenario& scenario, const ReplayOptions& options) {
  Simulation sim = simulate(scenario, options);
  // simulate() chooses its cost model with make_cost_model too: a kernel profile, else the roofline.
  return {scenario.name, std::move(sim.program), std::move(sim.timeline), std::move(sim.report), scenario,
          make_cost_model(scenario)};
}

StepResult read_trace_step(const std::string& path) {
  RecordedStep step = read_chrome_trace_file(path);
  StepResult result{std::filesystem::path(path).filename().string(), std::move(step.program),
                    std::move(step.timeline), {}, std::nullopt, nullptr};
  result.report = timing_report(result.program, result.timeline);
  result.report.scenario_name = result.title;
  return result;
}

}  // namespace simtrain::gui
