#include "bench/validation_rows.hpp"

#include <cctype>
#include <fstream>

#include "sim/base/text_format.hpp"
#include "sim/engine/simulate.hpp"

namespace simtrain {

namespace {

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Every published run fitted its GPUs: a predicted peak above the GPU's
// memory is the memory model's error, named as such.
std::string memory_note(const StepReport& report) {
  constexpr double GiB = 1024.0 * 1024 * 1024;
  return format("memory %.1f", report.peak_memory_bytes / GiB) + format(" of %.0f GiB", report.gpu_memory_bytes / GiB) +
         (report.peak_memory_bytes > report.gpu_memory_bytes ? " (OUT OF MEMORY where the run was made)" : "");
}

// What a table compares: a rate (higher is faster: TFLOP/s, tokens/s), whose
// published step time over the predicted one is predicted / published; or a
// time, whose is published / predicted.
enum class Figure { rate, seconds };

ValidationRow row(const std::string& name, const Scenario& scenario, Figure figure, double predicted,
                  double published, const std::string& note) {
  const double step_time_error = figure == Figure::rate ? predicted / published - 1 : published / predicted - 1;
  return {.name = name,
          .predicted = predicted,
          .published = published,
          .note = note,
          .band = {.name = name,
                   .gpu = scenario.cluster.gpu.name,
                   .band_class = band_class(scenario),
                   .step_time_error = step_time_error}};
}

ValidationTable megatron_sc21() {
  ValidationTable table{.title = "Megatron-LM SC'21 Table 1 (A100): TFLOP/s per GPU as Megatron counts them,\n"
                                 "96 B s l h^2 (1 + s/6h + V/16lh) per step, recompute included",
                        .gpu = "A100-80GB",
                        .rows = {}};
  const nlohmann::json published = validation_file("megatron_sc21.json");
  for (const auto& r : published["rows"]) {
    const std::string name = "megatron-" + r["params_B"].dump() + "b-" + r["gpus"].dump() + "xa100";
    const Scenario scenario = load_scenario(name);
    const Simulation sim = simulate(scenario);
    table.rows.push_back(row(name, scenario, Figure::rate, sim.report.hardware_tflops_per_gpu,
                             r["tflops_per_gpu"].get<double>(),
                             format("step %.2f s, ", sim.report.step_seconds) +
                                 format("bubble %.1f %%, ", sim.report.bubble_fraction * 100) + memory_note(sim.report)));
  }
  return table;
}

ValidationTable korthikanti() {
  ValidationTable table{.title = "Korthikanti et al. 2022 (A100, TP 8): seconds per iteration", .gpu = "A100-80GB", .rows = {}};
  const nlohmann::json published = validation_file("korthikanti_2022.json");
  for (const auto& r : published["rows"]) {
    const std::string name = "korthikanti-" + lowercase(r["model"]) + "-" + r["gpus"].dump() + "xa100";
    const struct {
      const char* label;
      const char* field;
      std::vector<std::string> overrides;
    } settings[] = {{"full recompute", "iteration_s_full_recompute", {}},
                    {"selective + SP", "iteration_s_selective_recompute_sequence_parallel",
                     {"recompute_granularity=selective", "sequence_parallel=true"}}};
    for (const auto& setting : settings) {
      const Scenario scenario = load_scenario(name, setting.overrides);
      const Simulation sim = simulate(scenario);
      table.rows.push_back(row(name + " " + setting.label, scenario, Figure::seconds, sim.report.step_seconds,
                               r[setting.field].get<double>(), memory_note(sim.report)));
    }
  }
  return table;
}

ValidationTable nemo_h100() {
  ValidationTable table{
      .title = "NeMo 25.11 on DGX H100, fp8 (current scaling): tokens/s per GPU (model TFLOP/s per GPU in the note)",
      .gpu = "H100-SXM",
      .rows = {}};
  const nlohmann::json published = validation_file("nemo_h100.json");
  for (const auto& r : published["rows"]) {
    std::string name = lowercase(r["model"]);
    if (r["config"].contains("num_experts"))  // "Qwen3-30B-A3B" -> "qwen3-30b-a3b-16xh100"
      name += "-" + r["gpus"].dump() + "xh100";
    else  // "Llama-3-8B" -> "nemo-llama3-8b-8xh100"
      name = "nemo-" + name.erase(name.find('-'), 1) + "-" + r["gpus"].dump() + "xh100";
    const Scenario scenario = load_scenario(name);
    const Simulation sim = simulate(scenario);
    table.rows.push_back(row(name, scenario, Figure::rate, sim.report.tokens_per_second / r["gpus"].get<double>(),
                             r["tokens_per_s_per_gpu"].get<double>(),
                             format("model TFLOP/s %.0f against ", sim.report.model_tflops_per_gpu) +
                                 r["model_tflops_per_gpu"].dump() + " (FLOPs as each counts them), " +
                                 memory_note(sim.report)));
  }
  return table;
}

}  // namespace

nlohmann::json validation_file(const std::string& name) {
  std::ifstream in(SIMTRAIN_SOURCE_DIR "/tests/validation/" + name);
  return nlohmann::json::parse(in);
}

std::vector<ValidationTable> end_to_end_validation_tables() { return {megatron_sc21(), korthikanti(), nemo_h100()}; }

std::vector<BandRow> band_rows(const std::vector<ValidationTable>& tables) {
  std::vector<BandRow> rows;
  for (const ValidationTable& table : tables)
    for (const ValidationRow& r : table.rows) rows.push_back(r.band);
  return rows;
}

}  // namespace simtrain
