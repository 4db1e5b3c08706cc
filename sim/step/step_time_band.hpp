#pragma once
// How far a predicted step time may be from a real one: the spread of the
// published runs simtrain was checked against whose GPU figures have the
// same provenance and whose model is of the same kind (dense or mixture of
// experts). The spread is that of these rows, not a confidence interval
// (docs/simulate.md). The rows' errors come from the validation bench
// (`simtrain_bench_validation --write-bands`, docs/validation.md), which
// writes the file compiled into the binary.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace simtrain {

// What a prediction is judged against: where the GPU's figures come from
// (the kind and the source: H100 and H800 carry H200's measured clocks over
// the same die, B200 carries them over to another architecture, two classes),
// and whether the model routes tokens to experts.
struct BandClass {
  ComputeProvenance gpu_figures = ComputeProvenance::scenario;
  std::string gpu_figures_source;  // GpuSpec::compute_source
  bool mixture_of_experts = false;
  bool operator==(const BandClass&) const = default;
};
BandClass band_class(const Scenario& scenario);
std::string workload_kind(const BandClass& c);  // "dense", "mixture of experts"
// "GPU figures carried over (H200's measured clocks, the same GH100 die at 700 W), dense"
std::string to_string(const BandClass& c);

// One published end-to-end run, simulated: published step time over
// predicted, less 1 (+0.05: the published run took 5 % longer than predicted).
struct BandRow {
  std::string name;  // the scenario and its setting: "korthikanti-22b-8xa100 selective + SP"
  std::string gpu;   // the scenario's GPU
  BandClass band_class;
  double step_time_error = 0;
};

// The rows of one class, in the order given.
struct StepTimeBand {
  BandClass band_class;
  std::vector<BandRow> rows;
  double lowest() const;   // the lowest and highest step_time_error of the rows
  double highest() const;
  std::string gpus() const;  // the rows' GPUs, each once: "A100-80GB"
  std::string range_text() const;  // "-1.7 % to +7.2 %", or "+207.0 %" where lowest and highest are one
};

// The rows grouped by class, classes in the order of their first row.
std::vector<StepTimeBand> derive_step_time_bands(const std::vector<BandRow>& rows);

// The band file: each class with its rows, errors rounded to 0.01 % (the
// file stays readable and the same where the last bits of a figure differ).
nlohmann::ordered_json step_time_bands_json(const std::vector<StepTimeBand>& bands);
// Throws InputError naming `file` and the field.
std::vector<StepTimeBand> step_time_bands_from_json(const nlohmann::json& document, const std::string& file);
// The band file compiled into the binary (sim/step/bands/step_time_bands.json).
const std::vector<StepTimeBand>& committed_step_time_bands();

// What the report says of a step time: the band of the scenario's class,
// or why there is none.
struct StepTimeBandVerdict {
  BandClass band_class;
  std::optional<StepTimeBand> band;  // absent: no validation row of the class
  std::string no_band_reason;        // where absent: why, in a few words
};
StepTimeBandVerdict step_time_band_of(const Scenario& scenario,
                                      const std::vector<StepTimeBand>& bands = committed_step_time_bands());
// "-1.7 % to +7.2 %: published step time against predicted, 7 validation
// rows of its class (A100-80GB, dense)", or "none: " and the reason.
std::string to_text(const StepTimeBandVerdict& verdict);
// {"class", "rows", "lowest", "highest", "row_gpus", "no_band_reason", "definition"}; lowest and
// highest null and the reason given where there is no band.
nlohmann::ordered_json to_json(const StepTimeBandVerdict& verdict);

}  // namespace simtrain
