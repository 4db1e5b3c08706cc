// Every published figure of tests/validation/ next to simtrain's prediction
// and its error: Megatron-LM SC'21 Table 1, Korthikanti et al. 2022, NeMo on
// DGX H100, and NCCL's bus bandwidth. One description per GPU and one set of
// model parameters serve all rows (printed at the end); nothing is fitted
// per row. The scenarios are files of scenarios/, each saying where its
// settings come from.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/text_format.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/gemm_model.hpp"
#include "sim/model/kernel_calibration.hpp"
#include "sim/model/workload.hpp"
#include "sim/network/collective_plan.hpp"
#include "sim/network/fabric.hpp"
#include "sim/network/layer_seconds.hpp"

using namespace simtrain;

namespace {

nlohmann::json validation_file(const std::string& name) {
  std::ifstream in(SIMTRAIN_SOURCE_DIR "/tests/validation/" + name);
  return nlohmann::json::parse(in);
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// A group of rows, printed as they come and summed up by their errors.
struct RowGroup {
  std::vector<double> percent;
  // Prints a row of the table and counts its error.
  void row(const std::string& name, double predicted, double published, const std::string& note) {
    percent.push_back((predicted - published) / published * 100);
    std::printf("  %-44s %10.2f %10.2f %+7.1f %%  %s\n", name.c_str(), predicted, published, percent.back(),
                note.c_str());
  }
  void print(const char* group, double goal_percent) const {
    double sum = 0, worst = 0;
    for (double e : percent) sum += std::abs(e), worst = std::max(worst, std::abs(e));
    int within = 0;
    for (double e : percent) within += std::abs(e) <= goal_percent;
    std::printf("  %s: mean |error| %.1f %%, worst %.1f %%, %d of %zu rows within %.0f %%\n\n", group,
                percent.empty() ? 0 : sum / static_cast<double>(percent.size()), worst, within, percent.size(),
                goal_percent);
  }
};

// Every published run fitted its GPUs: a predicted peak above the GPU's
// memory is the memory model's error, named as such.
std::string memory_note(const StepReport& report) {
  constexpr double GiB = 1024.0 * 1024 * 1024;
  return format("memory %.1f", report.peak_memory_bytes / GiB) + format(" of %.0f GiB", report.gpu_memory_bytes / GiB) +
         (report.peak_memory_bytes > report.gpu_memory_bytes ? " (OUT OF MEMORY where the run was made)" : "");
}

void table_header(const char* title) {
  std::printf("%s\n  %-44s %10s %10s %9s\n", title, "scenario", "predicted", "published", "error");
}

void megatron_sc21(RowGroup& a100) {
  table_header("Megatron-LM SC'21 Table 1 (A100): TFLOP/s per GPU as Megatron counts them,\n"
               "96 B s l h^2 (1 + s/6h + V/16lh) per step, recompute included");
  const nlohmann::json table = validation_file("megatron_sc21.json");
  for (const auto& r : table["rows"]) {
    const std::string name = "megatron-" + r["params_B"].dump() + "b-" + r["gpus"].dump() + "xa100";
    const Simulation sim = simulate(load_scenario(name));
    const double published = r["tflops_per_gpu"].get<double>();
    a100.row(name, sim.report.hardware_tflops_per_gpu, published,
             format("step %.2f s, ", sim.report.step_seconds) + format("bubble %.1f %%, ", sim.report.bubble_fraction * 100) +
                 memory_note(sim.report));
  }
}

void korthikanti(RowGroup& a100) {
  table_header("Korthikanti et al. 2022 (A100, TP 8): seconds per iteration");
  const nlohmann::json table = validation_file("korthikanti_2022.json");
  for (const auto& r : table["rows"]) {
    const std::string name = "korthikanti-" + lowercase(r["model"]) + "-" + r["gpus"].dump() + "xa100";
    const struct {
      const char* label;
      const char* field;
      std::vector<std::string> overrides;
    } settings[] = {{"full recompute", "iteration_s_full_recompute", {}},
                    {"selective + SP", "iteration_s_selective_recompute_sequence_parallel",
                     {"recompute_granularity=selective", "sequence_parallel=true"}}};
    for (const auto& setting : settings) {
      const Simulation sim = simulate(load_scenario(name, setting.overrides));
      const double published = r[setting.field].get<double>();
      a100.row(name + " " + setting.label, sim.report.step_seconds, published, memory_note(sim.report));
    }
  }
}

void nemo_h100(RowGroup& h100) {
  table_header("NeMo 25.11 on DGX H100, fp8 (current scaling): tokens/s per GPU (model TFLOP/s per GPU in the note)");
  const nlohmann::json table = validation_file("nemo_h100.json");
  for (const auto& r : table["rows"]) {
    std::string name = lowercase(r["model"]);
    if (r["config"].contains("num_experts"))  // "Qwen3-30B-A3B" -> "qwen3-30b-a3b-16xh100"
      name += "-" + r["gpus"].dump() + "xh100";
    else  // "Llama-3-8B" -> "nemo-llama3-8b-8xh100"
      name = "nemo-" + name.erase(name.find('-'), 1) + "-" + r["gpus"].dump() + "xh100";
    const Simulation sim = simulate(load_scenario(name));
    const double gpus = r["gpus"].get<double>();
    const double published = r["tokens_per_s_per_gpu"].get<double>();
    h100.row(name, sim.report.tokens_per_second / gpus, published,
             format("model TFLOP/s %.0f against ", sim.report.model_tflops_per_gpu) + r["model_tflops_per_gpu"].dump() +
                 " (FLOPs as each counts them), " + memory_note(sim.report));
  }
}

// Korthikanti's Table 4 (the 22B model, no recompute, no sequence
// parallelism): one layer's forward and backward on one TP rank
// (sim/network/layer_seconds.hpp), so the backward is a lower bound where its
// overlapped all-reduces outlast the compute beside them. A100's sustained
// clock is calibrated on this layer, forward and backward together
// (docs/gpus.md): these two rows check the calibration's arithmetic, the
// end-to-end rows above check the clock.
void korthikanti_per_layer(RowGroup& a100) {
  const nlohmann::json published = validation_file("korthikanti_2022.json")["per_layer"];
  const Scenario scenario = load_scenario("korthikanti-22b-8xa100", {"recompute_granularity=none"});
  const LayerSeconds layer = layer_seconds(scenario, build_workload(scenario), RooflineModel(scenario.cluster.gpu));
  table_header("Korthikanti et al. 2022 Table 4 (22B, TP 8, no recompute): one layer on one GPU, ms");
  a100.row("korthikanti-22b-8xa100 layer forward", 1e3 * layer.forward(), published["forward_ms"].get<double>(),
           format("compute %.2f ms", 1e3 * layer.compute.forward) + format(" + TP %.2f ms", 1e3 * layer.forward_tp));
  a100.row("korthikanti-22b-8xa100 layer backward", 1e3 * layer.backward(),
           published["backward_ms_no_recompute"].get<double>(),
           format("compute %.2f ms", 1e3 * layer.compute.backward) +
               format(" + blocking TP %.2f ms", 1e3 * layer.backward_tp));
}

// NCCL's bus bandwidth (nccl-tests: busbw = algbw x 2(n-1)/n for all-reduce)
// of the collective model, for a lone all-reduce of growing size.
void nccl_bus_bandwidth() {
  std::printf("NCCL all-reduce bus bandwidth, GB/s (the collective model alone, nccl-tests' busbw)\n");
  const struct {
    const char* setting;
    const char* scenario;
    std::vector<int> ranks;
    const char* published;
  } cases[] = {
      {"8 x H100 one node (ring)", "gpt3-175b-1024xh100", {0, 1, 2, 3, 4, 5, 6, 7}, "365-370 ring, 480 NVLS"},
      {"2 x H100 on two nodes, one 400 Gb/s NIC each", "gpt3-175b-1024xh100", {0, 8}, "46-49 per NDR NIC"},
      {"2 x A100 on two nodes, one 200 Gb/s NIC each", "megatron-1.7b-32xa100", {0, 8}, "24 per HDR NIC"},
  };
  const double sizes_bytes[] = {1 << 20, 16 << 20, 256 << 20, 1024.0 * (1 << 20), 8192.0 * (1 << 20)};
  std::printf("  %-46s", "setting \\ size");
  for (double s : sizes_bytes) std::printf(" %8.0f MiB", s / (1 << 20));
  std::printf("   published (large messages)\n");
  for (const auto& c : cases) {
    const Scenario scenario = load_scenario(c.scenario);
    const Fabric fabric(scenario.cluster.topology, static_cast<int>(scenario.cluster.num_gpus));
    std::printf("  %-46s", c.setting);
    const double n = static_cast<double>(c.ranks.size());
    for (double bytes : sizes_bytes) {
      const CollectivePlan plan = plan_collective(TaskKind::ALLREDUCE, c.ranks, bytes, 1, Algorithm::ring, fabric);
      const double seconds = closed_form_seconds(plan, fabric);
      std::printf(" %12.1f", bytes / seconds * 2 * (n - 1) / n / 1e9);
    }
    std::printf("   %s\n", c.published);
  }
  std::printf("\n");
}

// Where A100's sustained clock comes from, and its derivation done again
// (tests/test_gpu_calibration.cpp holds the built-in figure to it).
std::string a100_calibration() {
  const nlohmann::json published = validation_file("korthikanti_2022.json")["per_layer"];
  const double published_seconds =
      1e-3 * (published["forward_ms"].get<double>() + published["backward_ms_no_recompute"].get<double>());
  const Scenario scenario = load_scenario("korthikanti-22b-8xa100", {"recompute_granularity=none"});
  const Workload workload = build_workload(scenario);
  const LayerSeconds layer = layer_seconds(scenario, workload, RooflineModel(scenario.cluster.gpu));
  const double compute_seconds = published_seconds - layer.forward_tp - layer.backward_tp;
  const double clock_hz = derive_sustained_clock_hz_from_layer(workload.layer, scenario.training.dtype,
                                                               scenario.cluster.gpu, compute_seconds, "korthikanti_2022.json");
  return format("calibrated on Korthikanti et al. 2022 Table 4's 22B layer, forward + backward %.2f ms", 1e3 * published_seconds) +
         format(" less its blocking TP %.2f ms", 1e3 * (layer.forward_tp + layer.backward_tp)) +
         format(": %.0f MHz (docs/gpus.md)", clock_hz / 1e6);
}

void parameters() {
  const RooflineEfficiency e;
  std::printf("Parameters (the same for every row):\n");
  std::printf("  cost model: GEMMs by shape (sim/model/gemm_model.hpp: tiles, waves over the SMs, K loop at the "
              "sustained tensor clock); fused attention %.2f of peak forward, %.2f backward; memory-bound ops %.3f of "
              "HBM bandwidth; kernels at least %.0f us (sim/model/cost_model.hpp)\n",
              e.attention_forward, e.attention_backward, e.memory, e.min_kernel_seconds * 1e6);
  for (const GpuSpec& gpu : builtin_gpus()) {
    const std::string fp8_clock =
        gpu.peak_fp8_flops > 0 ? ", fp8 " + std::to_string(std::lround(sustained_clock_hz(gpu, Dtype::fp8) / 1e6)) : "";
    std::printf("  %-10s bf16 %.0f TFLOP/s, fp8 %.0f TFLOP/s, HBM %.0f GB/s, %d SMs, tensor clock %.0f MHz "
                "(sustained %.0f%s)\n",
                gpu.name.c_str(), gpu.peak_bf16_flops / 1e12, gpu.peak_fp8_flops / 1e12,
                gpu.hbm_bytes_per_second / 1e9, gpu.sm_count, gpu.tensor_clock_hz / 1e6,
                sustained_clock_hz(gpu, Dtype::bf16) / 1e6, fp8_clock.c_str());
  }
  std::printf("  A100-80GB sustained clock: %s\n", a100_calibration().c_str());
  for (const char* scenario : {"megatron-1.7b-32xa100", "gpt3-175b-1024xh100"}) {
    const Topology t = load_scenario(scenario).cluster.topology;
    std::printf("  topology %-20s NVLink %.0f GB/s x %.2f, NIC %.0f GB/s x %.2f\n", t.name.c_str(),
                t.nvlink_bytes_per_second / 1e9, t.nvlink_efficiency, t.nic_bytes_per_second / 1e9,
                t.network_efficiency);
  }
}

}  // namespace

int main() {
  RowGroup a100, h100;
  megatron_sc21(a100);
  std::printf("\n");
  korthikanti(a100);
  std::printf("\n");
  korthikanti_per_layer(a100);
  a100.print("A100 rows (goal: each within 5 %)", 5);
  nemo_h100(h100);
  h100.print("H100 fp8 rows (goal: each within 10 %)", 10);
  nccl_bus_bandwidth();
  std::printf("Zero Bubble (Qi et al. 2024) bubble rates: not run, the 1.5B model's configuration (the paper's\n"
              "Table 3) is not in tests/validation/pipeline_bubbles.json; the schedules' closed forms are tests.\n\n");
  parameters();
}
