#include "sim/step/step_time_band.hpp"

#include <algorithm>
#include <cmath>

#include "sim/base/embedded_files.hpp"
#include "sim/base/enum_named.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

constexpr const char* kDense = "dense";
constexpr const char* kMixtureOfExperts = "mixture of experts";

std::string percent(double fraction) { return format("%+.1f %%", fraction * 100); }

// A field the band file must have: its value, else InputError "missing".
template <typename Value>
Value required(JsonFields& fields, const std::string& key, std::optional<Value> value) {
  if (!value) fields.fail(key, "missing");
  return *value;
}

}  // namespace

BandClass band_class(const Scenario& scenario) {
  return {.gpu_figures = scenario.cluster.gpu.compute_provenance,
          .gpu_figures_source = scenario.cluster.gpu.compute_source,
          .mixture_of_experts = scenario.model.has_experts()};
}

std::string workload_kind(const BandClass& c) { return c.mixture_of_experts ? kMixtureOfExperts : kDense; }

std::string to_string(const BandClass& c) {
  return "GPU figures " + to_string(c.gpu_figures) + " (" + c.gpu_figures_source + "), " + workload_kind(c);
}

double StepTimeBand::lowest() const {
  return std::min_element(rows.begin(), rows.end(), [](const BandRow& a, const BandRow& b) {
           return a.step_time_error < b.step_time_error;
         })->step_time_error;
}

double StepTimeBand::highest() const {
  return std::max_element(rows.begin(), rows.end(), [](const BandRow& a, const BandRow& b) {
           return a.step_time_error < b.step_time_error;
         })->step_time_error;
}

std::string StepTimeBand::gpus() const {
  std::vector<std::string> names;
  for (const BandRow& row : rows)
    if (std::find(names.begin(), names.end(), row.gpu) == names.end()) names.push_back(row.gpu);
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string StepTimeBand::range_text() const {
  const double low = lowest(), high = highest();
  return low == high ? percent(low) : percent(low) + " to " + percent(high);
}

std::vector<StepTimeBand> derive_step_time_bands(const std::vector<BandRow>& rows) {
  std::vector<StepTimeBand> bands;
  for (const BandRow& row : rows) {
    auto band = std::find_if(bands.begin(), bands.end(),
                             [&](const StepTimeBand& b) { return b.band_class == row.band_class; });
    if (band == bands.end()) band = bands.insert(bands.end(), StepTimeBand{.band_class = row.band_class, .rows = {}});
    band->rows.push_back(row);
  }
  return bands;
}

nlohmann::ordered_json step_time_bands_json(const std::vector<StepTimeBand>& bands) {
  nlohmann::ordered_json classes = nlohmann::ordered_json::array();
  for (const StepTimeBand& band : bands) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const BandRow& row : band.rows)
      rows.push_back({{"name", row.name},
                      {"gpu", row.gpu},
                      {"step_time_error", std::round(row.step_time_error * 1e4) / 1e4}});
    classes.push_back({{"gpu_figures", to_string(band.band_class.gpu_figures)},
                       {"gpu_figures_source", band.band_class.gpu_figures_source},
                       {"workload", workload_kind(band.band_class)},
                       {"rows", rows}});
  }
  return {{"what", "each end-to-end validation row of tests/validation/: published step time / predicted - 1, "
                   "grouped by class (where the GPU's figures come from and their source, dense or mixture of experts); "
                   "docs/validation.md"},
          {"written_by", "build/simtrain_bench_validation --write-bands sim/step/bands/step_time_bands.json"},
          {"classes", classes}};
}

std::vector<StepTimeBand> step_time_bands_from_json(const nlohmann::json& document, const std::string& file) {
  JsonFields top(document, file, "");
  top.text("what");
  top.text("written_by");
  const nlohmann::json& classes = top.raw("classes");
  top.reject_unknown();
  if (!classes.is_array()) throw InputError(file, "classes", "must be an array");
  std::vector<std::string> provenances;
  for (int i = 0; i <= static_cast<int>(ComputeProvenance::scenario); ++i)
    provenances.push_back(to_string(static_cast<ComputeProvenance>(i)));
  std::vector<BandRow> rows;
  for (size_t c = 0; c < classes.size(); ++c) {
    const std::string path = "classes[" + std::to_string(c) + "]";
    JsonFields fields(classes[c], file, path + ".");
    BandClass band_class;
    band_class.gpu_figures =
        *enum_named(required(fields, "gpu_figures", fields.choice("gpu_figures", provenances)), ComputeProvenance::scenario);
    band_class.gpu_figures_source = required(fields, "gpu_figures_source", fields.text("gpu_figures_source"));
    band_class.mixture_of_experts =
        required(fields, "workload", fields.choice("workload", {kDense, kMixtureOfExperts})) == kMixtureOfExperts;
    const nlohmann::json& class_rows = fields.raw("rows");
    fields.reject_unknown();
    if (!class_rows.is_array() || class_rows.empty())
      throw InputError(file, path + ".rows", "must be an array of at least one row");
    for (size_t r = 0; r < class_rows.size(); ++r) {
      JsonFields row(class_rows[r], file, path + ".rows[" + std::to_string(r) + "].");
      rows.push_back({.name = required(row, "name", row.text("name")),
                      .gpu = required(row, "gpu", row.text("gpu")),
                      .band_class = band_class,
                      .step_time_error = row.required_number("step_time_error", -1)});
      row.reject_unknown();
    }
  }
  return derive_step_time_bands(rows);
}

const std::vector<StepTimeBand>& committed_step_time_bands() {
  static const std::vector<StepTimeBand> bands = [] {
    const std::string file = "sim/step/bands/step_time_bands.json";
    for (const EmbeddedFile& embedded : embedded_bands())
      if (embedded.name == "step_time_bands") return step_time_bands_from_json(parse_json(embedded.text, file), file);
    throw InputError(file, "", "not compiled into this binary");
  }();
  return bands;
}

StepTimeBandVerdict step_time_band_of(const Scenario& scenario, const std::vector<StepTimeBand>& bands) {
  StepTimeBandVerdict verdict{.band_class = band_class(scenario), .band = std::nullopt, .no_band_reason = ""};
  for (const StepTimeBand& band : bands)
    if (band.band_class == verdict.band_class) verdict.band = band;
  if (verdict.band) return verdict;
  verdict.no_band_reason = "no validation row of its class (" + to_string(verdict.band_class) + ")";
  if (verdict.band_class.gpu_figures == ComputeProvenance::spec_sheet)
    verdict.no_band_reason += "; expect it optimistic: a spec sheet's clocks are not those sustained under load "
                              "(docs/gpus.md)";
  return verdict;
}

std::string to_text(const StepTimeBandVerdict& verdict) {
  if (!verdict.band) return "none: " + verdict.no_band_reason;
  const StepTimeBand& band = *verdict.band;
  const size_t rows = band.rows.size();
  return band.range_text() + ": published step time against predicted, " + std::to_string(rows) + " validation row" +
         (rows == 1 ? "" : "s") + " of its class (" + band.gpus() + ", " + workload_kind(band.band_class) + ")";
}

nlohmann::ordered_json to_json(const StepTimeBandVerdict& verdict) {
  using ordered_json = nlohmann::ordered_json;
  const StepTimeBand* band = verdict.band ? &*verdict.band : nullptr;
  const BandClass& c = verdict.band_class;
  return {{"class",
           {{"gpu_figures", to_string(c.gpu_figures)}, {"gpu_figures_source", c.gpu_figures_source},
            {"workload", workload_kind(c)}}},
          {"rows", band ? band->rows.size() : 0},
          {"lowest", band ? ordered_json(band->lowest()) : ordered_json(nullptr)},
          {"highest", band ? ordered_json(band->highest()) : ordered_json(nullptr)},
          {"row_gpus", band ? ordered_json(band->gpus()) : ordered_json(nullptr)},
          {"no_band_reason", band ? ordered_json(nullptr) : ordered_json(verdict.no_band_reason)},
          {"definition", "published step time / predicted - 1 over the end-to-end validation rows of the class "
                         "(where the GPU's figures come from and their source, dense or mixture of experts): their lowest and highest, "
                         "the spread of those runs, not a confidence interval (docs/simulate.md)"}};
}

}  // namespace simtrain
