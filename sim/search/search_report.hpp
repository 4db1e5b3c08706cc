#pragma once
// A search's results for people (the ranked table, the Pareto front, what
// was pruned and why) and for machines (CSV of every simulated
// configuration, JSON, the front as an SVG plot). Nothing time- or
// machine-dependent is written, so outputs are identical across runs,
// --jobs and MPI ranks.
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/search/search.hpp"

namespace simtrain {

// The first `top` rows (0: all), then the Pareto front and the counts.
std::string to_text(const SearchResult& result, int top);
void write_csv(std::ostream& out, const SearchResult& result);
nlohmann::json to_json(const SearchResult& result);
void write_pareto_svg(std::ostream& out, const SearchResult& result);

}  // namespace simtrain
