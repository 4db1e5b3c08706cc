#include "simulation.hpp"

#include <chrono>

#include "fabric.hpp"
#include "program_builder.hpp"

namespace simtrain {

std::vector<double> work_durations(const Program& program, const CostModel& cost_model, Dtype dtype) {
  std::vector<double> seconds;
  for (const Work& work : program.works) seconds.push_back(work_seconds(cost_model, work, dtype));
  return seconds;
}

Simulation simulate(const Scenario& scenario, const ReplayOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  Simulation sim;
  sim.workload = build_workload(scenario);
  sim.program = build_program(scenario, sim.workload);
  const RooflineModel cost_model(scenario.cluster.gpu);
  const Fabric fabric(scenario.cluster.topology, sim.program.world_size);
  sim.timeline = replay(sim.program, fabric, work_durations(sim.program, cost_model, scenario.training.dtype), options);
  const double wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  sim.report = make_report(scenario, sim.workload, sim.program, sim.timeline, cost_model, wall_seconds);
  return sim;
}

}  // namespace simtrain
