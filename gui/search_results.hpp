#pragma once
// The configurations of a search (`simtrain search --json`), to plot and to
// run: each point's step time, cost and whether it is on the cost/time Pareto
// front, and the scenario fields it sets (Qt-free, so tests can check it).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain::gui {

struct SearchPoint {
  int rank = 0;  // in the search's table (1: the best for its objective)
  double step_seconds = 0;
  double cost = 0;  // of training the search's token budget, in `SearchResults::cost_unit`
  bool on_pareto_front = false;
  bool scenario_own = false;  // the scenario's own configuration
  std::string label;          // "8 x H100-SXM, TP2 PP1 DP4, mb 2, ZeRO 1, SP"
  // What it sets, as the scenario spells it: cluster.num_gpus and .gpu,
  // parallelism.* and training.* of the row.
  nlohmann::json fields;
};

struct SearchResults {
  std::string scenario_name;
  std::string cost_unit;
  std::vector<SearchPoint> points;  // those simulated that fit in memory, in rank order
};

// Throws InputError naming the file and the field for anything but a search's JSON.
SearchResults read_search_results(const std::string& path);

// `document` (a scenario) with the point's fields written in; the
// data-parallel size is left for num_gpus to give, as the search derived it.
nlohmann::json with_point(nlohmann::json document, const SearchPoint& point);

}  // namespace simtrain::gui
