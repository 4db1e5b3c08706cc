#pragma once
// What a search's text says before and in its table: the decision in one
// sentence (the best configuration, how it compares with the scenario's
// own, the cheapest or fastest other), and the table's lines, in which rows
// that differ only in a setting that changes nothing (ZeRO 1 and 2 with the
// same step) are one line and rows within SearchResult::tie_fraction of a
// better one share its rank ("3=").
#include <string>
#include <vector>

#include "sim/search/search.hpp"

namespace simtrain {

struct TableLine {
  std::vector<int> rows;  // indices into SearchResult::rows, best first
  std::string rank;       // "3", or "3=" for a line tied with others
  bool after_gap = false; // the scenario's own row, below the rows shown before it
};

// The lines of the first `top` rows (0: all), best first; then, if none of
// them is the scenario's own configuration, the line of its row.
std::vector<TableLine> table_lines(const SearchResult& result, int top);

std::string decision_text(const SearchResult& result);

}  // namespace simtrain
