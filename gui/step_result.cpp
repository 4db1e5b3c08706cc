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
          make_cost_model(scenario), {}};
}

StepResult read_trace_step(const std::string& path) {
  RecordedStep step = read_chrome_trace_file(path);
  StepResult result{std::filesystem::path(path).filename().string(), std::move(step.program),
                    std::move(step.timeline), {}, std::nullopt, nullptr, {}};
  result.report = timing_report(result.program, result.timeline);
  result.report.scenario_name = result.title;
  std::vector<std::pair<std::string, std::string>>& facts = result.trace_facts;
  facts.push_back({"file", path});
  facts.push_back({"made by", step.made_by.empty() ? "not said" : step.made_by});
  if (step.timeline.live) {
    facts.push_back({"device", step.timeline.live->device});
    facts.push_back({"dtype", to_string(step.timeline.live->dtype)});
  }
  if (!step.origin.scenario.empty()) facts.push_back({"scenario", step.origin.scenario});
  if (!step.origin.overrides.empty()) {
    std::string overrides;
    for (const std::string& o : step.origin.overrides) overrides += (overrides.empty() ? "" : " ") + o;
    facts.push_back({"overrides", overrides});
  }
  if (!step.program_hash.empty()) facts.push_back({"program hash", step.program_hash});
  const Program& p = result.program;
  facts.push_back({"ranks", std::to_string(p.world_size) + " (" + std::to_string(p.pipeline_size) + " pipeline stages)"});
  facts.push_back({"micro-batches", std::to_string(p.micro_batches)});
  facts.push_back({"tasks", std::to_string(p.tasks.size())});
  return result;
}

}  // namespace simtrain::gui
