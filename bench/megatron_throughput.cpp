// Predicted TFLOP/s per GPU for the Megatron-LM SC'21 Table 1 rows shipped in
// scenarios/, next to the published figure. One A100 description and one set
// of efficiency parameters serve all rows; nothing is fitted per row.
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/engine/simulate.hpp"

int main() {
  std::ifstream in(SIMTRAIN_SOURCE_DIR "/tests/validation/megatron_sc21.json");
  const nlohmann::json table = nlohmann::json::parse(in);
  std::printf("%-28s %10s %10s %8s %8s %8s\n", "scenario", "predicted", "published", "error", "step s", "bubble");
  for (const auto& row : table["rows"]) {
    const std::string name = "megatron-" + row["params_B"].dump() + "b-" + row["gpus"].dump() + "xa100";
    simtrain::ReplayOptions options;
    const simtrain::Simulation sim = simtrain::simulate(simtrain::load_scenario(name), options);
    const double predicted = sim.report.hardware_tflops_per_gpu;
    const double published = row["tflops_per_gpu"].get<double>();
    std::printf("%-28s %10.1f %10.1f %+7.1f%% %8.2f %7.1f%%\n", name.c_str(), predicted, published,
                (predicted - published) / published * 100, sim.report.step_seconds, sim.report.bubble_fraction * 100);
  }
  std::printf("TFLOP/s per GPU as Megatron counts them: 96 B s l h^2 (1 + s/6h + V/16lh) per step, recompute included\n");
}
