// Every published figure of tests/validation/ next to simtrain's prediction
// and its error: Megatron-LM SC'21 Table 1, Korthikanti et al. 2022, NeMo on
// DGX H100, and NCCL's bus bandwidth; the report's step-time error bands
// derived from the end-to-end rows. One description per GPU and one set of
// model parameters serve all rows (printed at the end); nothing is fitted
// per row. The scenarios are files of scenarios/, each saying where its
// settings come from.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/validation_rows.hpp"
#include "sim/base/atomic_file.hpp"
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

void table_header(const char* title) {
  std::printf("%s\n  %-44s %10s %10s %9s\n", title, "scenario", "predicted", "published", "error");
}

// The end-to-end tables of one GPU's rows, each followed by a blank line.
void print_tables(const std::vector<ValidationTable>& tables, const std::string& gpu, RowGroup& group) {
  for (const ValidationTable& table : tables) {
    if (table.gpu != gpu) continue;
    table_header(table.title.c_str());
    for (const ValidationRow& r : table.rows) group.row(r.name, r.predicted, r.published, r.note);
    std::printf("\n");
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
              "sustained tensor clock); fused attention %.2f of peak forward, %.2f backward at head_dim 128 and 8K "
              "tokens, by shape elsewhere (sim/model/attention_efficiency.hpp); memory-bound ops at each GPU's HBM "
              "efficiency; kernels at least %.0f us (sim/model/cost_model.hpp); collectives beside compute take "
              "their CTAs' SMs from it (sim/engine/compute_interference.hpp)\n",
              e.attention_forward, e.attention_backward, e.min_kernel_seconds * 1e6);
  for (const GpuSpec& gpu : builtin_gpus()) {
    const std::string fp8_clock =
        gpu.peak_fp8_flops > 0 ? ", fp8 " + std::to_string(std::lround(sustained_clock_hz(gpu, Dtype::fp8) / 1e6)) : "";
    std::printf("  %-10s bf16 %.0f TFLOP/s, fp8 %.0f TFLOP/s, HBM %.0f GB/s x %.3f, %d SMs, tensor clock %.0f MHz "
                "(sustained %.0f%s)\n",
                gpu.name.c_str(), gpu.peak_bf16_flops / 1e12, gpu.peak_fp8_flops / 1e12,
                gpu.hbm_bytes_per_second / 1e9, e.hbm_fraction(gpu), gpu.sm_count, gpu.tensor_clock_hz / 1e6,
                sustained_clock_hz(gpu, Dtype::bf16) / 1e6, fp8_clock.c_str());
    std::printf("  %-10s sustained clock: %s (%s)\n", "", to_string(gpu.compute_provenance).c_str(),
                gpu.compute_source.c_str());
  }
  std::printf("  A100-80GB sustained clock: %s\n", a100_calibration().c_str());
  for (const char* scenario : {"megatron-1.7b-32xa100", "gpt3-175b-1024xh100"}) {
    const Topology t = load_scenario(scenario).cluster.topology;
    std::printf("  topology %-20s NVLink %.0f GB/s x %.2f, NIC %.0f GB/s x %.2f\n", t.name.c_str(),
                t.nvlink_bytes_per_second / 1e9, t.nvlink_efficiency, t.nic_bytes_per_second / 1e9,
                t.network_efficiency);
  }
}

// The step-time bands the report gives (sim/step/step_time_band.hpp), from
// the end-to-end rows above, and the classes of built-in GPUs no row covers.
void step_time_bands(const std::vector<BandRow>& rows) {
  std::printf("Step-time error bands of the report (published step time / predicted - 1, end-to-end rows by class;\n"
              "the Table 4 layer rows calibrate A100 and are left out):\n");
  const std::vector<StepTimeBand> bands = derive_step_time_bands(rows);
  for (const StepTimeBand& band : bands) {
    std::printf("  %s: %d row%s, %s (%s)\n", to_string(band.band_class).c_str(), static_cast<int>(band.rows.size()),
                band.rows.size() == 1 ? "" : "s", band.range_text().c_str(), band.gpus().c_str());
  }
  std::vector<std::pair<BandClass, std::string>> uncovered;  // a class no row covers, its built-in GPUs
  for (const GpuSpec& gpu : builtin_gpus())
    for (bool moe : {false, true}) {
      const BandClass c{
          .gpu_figures = gpu.compute_provenance, .gpu_figures_source = gpu.compute_source, .mixture_of_experts = moe};
      if (std::any_of(bands.begin(), bands.end(), [&](const StepTimeBand& b) { return b.band_class == c; })) continue;
      auto known = std::find_if(uncovered.begin(), uncovered.end(), [&](const auto& u) { return u.first == c; });
      if (known == uncovered.end()) uncovered.push_back({c, gpu.name});
      else known->second += ", " + gpu.name;
    }
  for (const auto& [c, gpus] : uncovered)
    std::printf("  %s: no row, no band (%s)\n", to_string(c).c_str(), gpus.c_str());
  std::printf("\n");
}

}  // namespace

// With --write-bands FILE: the band file the binary compiles in
// (sim/step/bands/step_time_bands.json, docs/validation.md), written after
// the output.
int main(int argc, char** argv) {
  const std::string usage = "usage: simtrain_bench_validation [--write-bands FILE]\n";
  if (!(argc == 1 || (argc == 3 && std::string(argv[1]) == "--write-bands"))) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  const std::vector<ValidationTable> tables = end_to_end_validation_tables();
  RowGroup a100, h100;
  print_tables(tables, "A100-80GB", a100);
  korthikanti_per_layer(a100);
  a100.print("A100 rows (goal: each within 5 %)", 5);
  print_tables(tables, "H100-SXM", h100);
  h100.print("H100 fp8 rows (goal: each within 10 %)", 10);
  nccl_bus_bandwidth();
  std::printf("Zero Bubble (Qi et al. 2024) bubble rates: not run, the 1.5B model's configuration (the paper's\n"
              "Table 3) is not in tests/validation/pipeline_bubbles.json; the schedules' closed forms are tests.\n\n");
  step_time_bands(band_rows(tables));
  parameters();
  if (argc == 3) {
    const std::string path = argv[2];
    write_file_atomically(path, [&](std::ostream& out) {
      out << step_time_bands_json(derive_step_time_bands(band_rows(tables))).dump(2) << "\n";
    });
    std::printf("\nwrote %s\n", path.c_str());
  }
}
