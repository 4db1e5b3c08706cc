#include "list_command.hpp"

#include <cstdio>
#include <string>

#include "sim/base/embedded_files.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/text_format.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

namespace {

constexpr double kTera = 1e12, kGiga = 1e9, kMega = 1e6, kGiB = double(uint64_t{1} << 30);

// A GPU as gpu_from_json reads an inline one (sim/scenario/gpu_spec.hpp).
nlohmann::ordered_json gpu_json(const GpuSpec& gpu) {
  nlohmann::ordered_json j = {{"name", gpu.name},
                              {"peak_bf16_tflops", gpu.peak_bf16_flops / kTera},
                              {"peak_fp8_tflops", gpu.peak_fp8_flops / kTera},
                              {"hbm_GBps", gpu.hbm_bytes_per_second / kGiga},
                              {"memory_GiB", gpu.memory_bytes / kGiB},
                              {"sm_count", gpu.sm_count},
                              {"tensor_clock_MHz", gpu.tensor_clock_hz / kMega},
                              {"sustained_tensor_clock_MHz", gpu.sustained_tensor_clock_hz / kMega}};
  if (gpu.peak_fp4_flops > 0) j["peak_fp4_tflops"] = gpu.peak_fp4_flops / kTera;
  if (gpu.sustained_fp8_tensor_clock_hz > 0) j["sustained_fp8_tensor_clock_MHz"] = gpu.sustained_fp8_tensor_clock_hz / kMega;
  if (gpu.achievable_matmul_bf16_flops > 0) j["achievable_matmul_bf16_tflops"] = gpu.achievable_matmul_bf16_flops / kTera;
  if (gpu.achievable_matmul_fp8_flops > 0) j["achievable_matmul_fp8_tflops"] = gpu.achievable_matmul_fp8_flops / kTera;
  if (gpu.rental_usd_per_gpu_hour > 0) j["rental_usd_per_gpu_hour"] = gpu.rental_usd_per_gpu_hour;
  return j;
}

// "8 x 400 Gb/s NICs per node", "16 x 16 x 24 torus of 100 GB/s links", ...
std::string network_text(const Topology& t) {
  if (t.kind == TopologyKind::torus) {
    std::string dims;
    for (int d : t.torus_dims) dims += (dims.empty() ? "" : " x ") + std::to_string(d);
    return dims + " torus of " + number_text(t.torus_link_bytes_per_second / kGiga) + " GB/s links";
  }
  std::string text = std::to_string(t.nics_per_node) + " x " + number_text(t.nic_bytes_per_second * 8 / kGiga) +
                     " Gb/s NICs per node";
  if (t.kind == TopologyKind::dragonfly)
    return text + "; " + std::to_string(t.dragonfly_groups) + " groups of " + std::to_string(t.routers_per_group) +
           " routers";
  if (t.spine_oversubscription > 1) text += format(", spine oversubscribed %g:1", t.spine_oversubscription);
  return text;
}

std::string row(const char* pattern, auto... values) {
  char line[256];
  std::snprintf(line, sizeof line, pattern, values...);
  return line;
}

void print_table(std::ostream& out) {
  out << row("%-11s %13s %12s %8s %9s %4s %13s\n", "GPUs", "bf16 TFLOP/s", "fp8 TFLOP/s", "memory", "HBM GB/s", "SMs",
             "USD/GPU-hour");
  for (const GpuSpec& gpu : builtin_gpus())
    out << row("%-11s %13s %12s %4s GiB %9s %4d %13s\n", gpu.name.c_str(),
               significant(gpu.peak_bf16_flops / kTera).c_str(),
               gpu.peak_fp8_flops > 0 ? significant(gpu.peak_fp8_flops / kTera).c_str() : "-",
               significant(gpu.memory_bytes / kGiB).c_str(), significant(gpu.hbm_bytes_per_second / kGiga).c_str(),
               gpu.sm_count, gpu.rental_usd_per_gpu_hour > 0 ? format("%.2f", gpu.rental_usd_per_gpu_hour).c_str() : "-");
  out << "(fp16 runs at the bf16 peak; dense tensor-core figures)\n\n";
  out << row("%-25s %-10s %10s %12s  %s\n", "topologies", "kind", "GPUs/node", "NVLink GB/s", "network");
  for (const EmbeddedFile& file : embedded_topologies()) {
    const Topology t = topology_from_json(std::string(file.name), "topologies", "", ".");
    out << row("%-25s %-10s %10d %12s  %s\n", t.name.c_str(), to_string(t.kind).c_str(), t.gpus_per_node,
               number_text(t.nvlink_bytes_per_second / kGiga).c_str(), network_text(t).c_str());
  }
  out << "\n" << row("%-25s %s\n", "scenarios", "cluster");
  for (const EmbeddedFile& file : embedded_scenarios()) {
    const Scenario s = load_scenario(std::string(file.name));
    out << row("%-25s %s x %s on %s\n", std::string(file.name).c_str(),
               with_commas(static_cast<double>(s.cluster.num_gpus)).c_str(), s.cluster.gpu.name.c_str(),
               s.cluster.topology.name.c_str());
  }
  out << "\nsimtrain list --json: every figure, each GPU and topology as a scenario takes it inline\n";
}

}  // namespace

nlohmann::ordered_json builtins_json() {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array(), topologies = nlohmann::ordered_json::array(),
                         scenarios = nlohmann::ordered_json::array();
  for (const GpuSpec& gpu : builtin_gpus()) gpus.push_back(gpu_json(gpu));
  for (const EmbeddedFile& file : embedded_topologies())
    topologies.push_back(nlohmann::ordered_json::parse(file.text));
  for (const EmbeddedFile& file : embedded_scenarios()) {
    const Scenario s = load_scenario(std::string(file.name));
    scenarios.push_back({{"name", file.name},
                         {"num_gpus", s.cluster.num_gpus},
                         {"gpu", s.cluster.gpu.name},
                         {"topology", s.cluster.topology.name}});
  }
  return {{"gpus", gpus}, {"topologies", topologies}, {"scenarios", scenarios}};
}

ListCommand::ListCommand(CLI::App& app) {
  command_ = app.add_subcommand("list", "list the built-in GPUs, topologies and scenarios");
  command_->add_flag("--json", json_,
                     "every figure as JSON: each GPU as a scenario's inline cluster.gpu takes it, each topology as its file");
}

void ListCommand::run(std::ostream& out) const {
  if (json_)
    out << builtins_json().dump(2) << "\n";
  else
    print_table(out);
}

}  // namespace simtrain
