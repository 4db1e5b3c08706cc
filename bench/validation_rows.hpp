#pragma once
// The end-to-end rows of tests/validation/: each a published training run
// that a file of scenarios/ describes, simulated, beside its published
// figure (Megatron-LM SC'21 Table 1, Korthikanti et al. 2022, NeMo on DGX
// H100). The validation bench prints them; their step-time errors make the
// report's error bands (sim/step/step_time_band.hpp), and a test checks the
// committed band file against them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/step/step_time_band.hpp"

namespace simtrain {

struct ValidationRow {
  std::string name;  // the scenario and its setting
  double predicted = 0;
  double published = 0;  // in its table's unit
  std::string note;      // other figures of the prediction
  BandRow band;          // its class and published step time / predicted - 1
};

struct ValidationTable {
  std::string title;  // the source, what is compared and in which unit
  std::string gpu;    // every row's GPU
  std::vector<ValidationRow> rows;
};

// tests/validation/NAME, parsed.
nlohmann::json validation_file(const std::string& name);

// Simulates every row (a few seconds).
std::vector<ValidationTable> end_to_end_validation_tables();
std::vector<BandRow> band_rows(const std::vector<ValidationTable>& tables);

}  // namespace simtrain
