#include "sim/engine/simulate.hpp"

#include <chrono>
#include <set>

#include "sim/base/input_error.hpp"
#include "sim/base/text_format.hpp"
#include "sim/engine/platform_file.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/network/fabric.hpp"
#include "sim/program/program_builder.hpp"

namespace simtrain {

std::vector<double> work_durations(const Program& program, const CostModel& cost_model, Dtype dtype) {
  std::vector<double> seconds;
  for (const Work& work : program.works) seconds.push_back(work_seconds(cost_model, work, dtype));
  return seconds;
}

void check_link_names(const Fabric& fabric, const ReplayOptions& options, const std::string& file) {
  std::set<std::string> names;
  for (const LinkSpec& link : fabric.links()) names.insert(link.name);
  auto check = [&](const std::string& name, const std::string& field) {
    if (!names.count(name))
      throw InputError(file, field, "no link '" + name + "' in this cluster (names look like " +
                                        fabric.links().front().name + ", " + fabric.links().back().name + ")");
  };
  for (const auto& [name, factor] : options.link_bandwidth_factors) check(name, "cluster.link_bandwidth_factors." + name);
  for (const FailureEvent& e : options.failures)
    if (e.rank < 0) check(e.link, "failure link");
}

namespace {

// `options` with its phases and progress said to be `replay`'s ("sensitivity 1/2 (compute +10 %)").
ReplayOptions named_replay(const ReplayOptions& options, const std::string& replay) {
  ReplayOptions named = options;
  if (options.on_phase)
    named.on_phase = [on_phase = options.on_phase, replay](const std::string& phase) { on_phase(replay + ": " + phase); };
  if (options.on_progress)
    named.on_progress = [on_progress = options.on_progress, replay](ReplayProgress progress) {
      progress.replay = replay;
      on_progress(progress);
    };
  return named;
}

Sensitivity replay_sensitivity(const Topology& topology, const Program& program, const Fabric& fabric,
                               const std::vector<double>& work_seconds, const ReplayOptions& options) {
  Sensitivity s;
  s.computed = true;
  std::vector<double> slower = work_seconds;
  for (double& seconds : slower) seconds *= kSensitivityComputeFactor;
  s.compute_slower_seconds =
      replay(program, fabric, slower,
             named_replay(options, format("sensitivity 1/2 (compute %+g %%)", 100 * (kSensitivityComputeFactor - 1))))
          .step_seconds;
  const ReplayOptions network_options =
      named_replay(options, format("sensitivity 2/2 (network %gx slower)", 1 / kSensitivityNetworkFactor));
  if (network_options.on_phase) network_options.on_phase("building the fabric");
  Topology slower_network = topology;  // efficiencies scale every link's bandwidth
  slower_network.nvlink_efficiency *= kSensitivityNetworkFactor;
  slower_network.network_efficiency *= kSensitivityNetworkFactor;
  s.network_slower_seconds =
      replay(program, Fabric(slower_network, program.world_size, program.servers), work_seconds, network_options)
          .step_seconds;
  return s;
}

}  // namespace

Simulation simulate(const Scenario& scenario, const ReplayOptions& options, SensitivityReplays sensitivity) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto phase = [&](const char* text) {
    if (options.on_phase) options.on_phase(text);
  };
  Simulation sim;
  phase("building the workload");
  sim.workload = build_workload(scenario);
  phase("building the Program");
  sim.program = build_program(scenario, sim.workload);
  phase("building the fabric");
  const std::unique_ptr<CostModel> selected_cost_model = make_cost_model(scenario);  // kernel profile, else roofline
  const CostModel& cost_model = *selected_cost_model;
  const Topology topology = with_platform_routes(scenario.cluster.topology, sim.program.world_size);
  const Fabric fabric(topology, sim.program.world_size, sim.program.servers);
  ReplayOptions cluster_options = options;
  const Heterogeneity& h = scenario.cluster.heterogeneity;
  if (cluster_options.gpu_speed_factors.empty()) cluster_options.gpu_speed_factors = h.gpu_speed_factors;
  cluster_options.link_bandwidth_factors.insert(h.link_bandwidth_factors.begin(), h.link_bandwidth_factors.end());
  cluster_options.interference = compute_interference(scenario);
  if (!options.free_launches) cluster_options.host = host_model(sim.program, scenario);
  check_link_names(fabric, cluster_options, scenario.source);
  phase("timing the work");
  const std::vector<double> work_seconds = work_durations(sim.program, cost_model, scenario.training.dtype);
  sim.timeline = replay(sim.program, fabric, work_seconds, cluster_options);
  const double wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  phase("writing the report");
  sim.report = make_report(scenario, sim.workload, sim.program, sim.timeline, cost_model, wall_seconds);
  if (sensitivity == SensitivityReplays::always ||
      (sensitivity == SensitivityReplays::automatic && sim.program.tasks.size() <= kSensitivityTaskLimit &&
       sim.timeline.flows <= kSensitivityFlowLimit))
    sim.report.sensitivity = replay_sensitivity(topology, sim.program, fabric, work_seconds, cluster_options);
  else if (sensitivity == SensitivityReplays::automatic)
    sim.report.sensitivity = Sensitivity{};
  return sim;
}

}  // namespace simtrain
