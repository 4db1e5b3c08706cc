#include "chakra_simulation.hpp"

#include <chrono>
#include <utility>

#include "sim/base/input_error.hpp"
#include "sim/engine/replay.hpp"
#include "sim/engine/platform_file.hpp"
#include "sim/network/fabric.hpp"
#include "sim/step/scenario_summary.hpp"

namespace simtrain {

ChakraSimulation simulate_chakra(ChakraTraces traces, const std::string& prefix, const Topology& topology,
                                 const GpuSpec& gpu, const ReplayOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  ChakraSimulation sim{std::move(traces), {}, {}};
  const Program& program = sim.traces.program;
  if (const int slots = topology.max_gpus(); slots > 0 && program.world_size > slots)
    throw InputError("--topology", "", "'" + topology.name + "' holds " + std::to_string(slots) + " GPUs, the traces have " +
                                           std::to_string(program.world_size) + " ranks");
  sim.timeline = replay(program, Fabric(with_platform_routes(topology, program.world_size), program.world_size), sim.traces.work_seconds, options);

  StepReport& r = sim.report = timing_report(program, sim.timeline);
  r.scenario_name = "Chakra traces " + prefix;
  r.scenario_summary_lines.push_back(std::to_string(program.world_size) + " ranks from " + prefix + ".{0.." +
                                     std::to_string(program.world_size - 1) + "}.et, compute as recorded; topology " +
                                     topology.name + ", GPU " + gpu.name);
  for (const std::string& note : platform_note_lines(topology)) r.scenario_summary_lines.push_back(note);
  const std::string ignored = ignored_text(sim.traces);
  if (!ignored.empty()) r.scenario_summary_lines.push_back("WARNING: " + ignored);
  r.scenario_summary = {{"chakra_prefix", prefix}, {"ranks", program.world_size}, {"topology", topology.name},
                        {"gpu", gpu.name}, {"ignored_nodes", sim.traces.ignored}};
  if (const nlohmann::ordered_json notes = platform_note_json(topology); !notes.is_null())
    r.scenario_summary["simgrid_platform"] = notes;
  add_replay_figures(r, program, sim.timeline);
  r.hardware_tflops_per_gpu = sim.traces.recorded_flops / r.step_seconds / program.world_size / 1e12;
  r.memory_known = false;
  r.workload_known = false;
  long long compute_tasks = 0;
  for (const Task& t : program.tasks) compute_tasks += is_compute(t.kind);
  r.time_sources["recorded"]["Chakra duration_micros"] = compute_tasks;
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return sim;
}

}  // namespace simtrain
