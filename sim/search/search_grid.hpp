#pragma once
// The grid of a search (search.hpp): every combination of the dimensions'
// values, GPU counts and GPU types, each parsed into a scenario, checked
// against memory and given a lower bound on its step time. Duplicates,
// invalid points, points out of memory and needless recompute are counted
// and dropped; something the user asked for with which nothing is valid and
// fits is refused.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "sim/search/search.hpp"

namespace simtrain {

// One configuration that survived parsing and the memory check.
struct Candidate {
  int index = 0;
  Scenario scenario;
  double peak_memory_bytes = 0;
  double bound_seconds = 0;  // step_lower_bound_seconds
  double bound_time = 0, bound_cost = 0, bound_objective = 0;  // of the token budget at that bound
  std::string simulation_key;  // identical simulations share it
  bool baseline = false;       // the scenario's own configuration, as given: simulated whatever its bound
};

struct SearchGrid {
  std::vector<Candidate> candidates;     // in enumeration order
  SearchCounts counts;                   // what became of the grid points (none simulated yet)
  std::vector<std::string> columns;      // --vary keys beyond the default grid's
  std::string cost_unit;                 // "USD", or "GPU-hours" when a GPU type has no price
  std::map<std::string, double> prices;  // per GPU-hour in cost_unit, by GPU type
  std::string baseline_absent;           // why the scenario's own configuration is not a candidate ("" if it is)
  std::vector<std::string> warnings;     // SearchResult::warnings
};

// Throws InputError (naming the option) for a bad request, or one of which
// nothing is valid and fits. `budget_tokens`: what the bounds' time and cost train.
SearchGrid enumerate_grid(const SearchRequest& request, double budget_tokens);

// Seconds and cost (at `prices`) of training `budget_tokens` at `step_seconds`
// a step. Throws InputError when either is beyond a double's range.
std::pair<double, double> time_and_cost(const Scenario& scenario, double step_seconds, double budget_tokens,
                                        const std::map<std::string, double>& prices);

}  // namespace simtrain
