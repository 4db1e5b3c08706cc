#include "sim/program/trace_ranks.hpp"

#include <algorithm>
#include <charconv>

#include "sim/base/input_error.hpp"

namespace simtrain {

namespace {

const std::string expected = "expected all, representatives, stage:P[,P...] or rank:R[,R...]";

// "0,3,17" -> {0, 3, 17}, sorted and without repeats; throws naming the bad item.
std::vector<int> parse_numbers(const std::string& list, const std::string& option, const std::string& what) {
  std::vector<int> numbers;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    int value = -1;
    const auto [parsed_to, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || parsed_to != item.data() + item.size() || value < 0)
      throw InputError("simulate", option,
                       "expected a comma-separated list of " + what + " numbers (0 or more), got '" + item + "'");
    numbers.push_back(value);
    if (end == list.size()) break;
    begin = end + 1;
  }
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  return numbers;
}

}  // namespace

TraceRanks parse_trace_ranks(const std::string& text, const std::string& option) {
  if (text == "representatives") return {TraceRanks::Mode::representatives, {}};
  if (text == "all") return {TraceRanks::Mode::all, {}};
  if (text.starts_with("stage:")) return {TraceRanks::Mode::stages, parse_numbers(text.substr(6), option, "pipeline rank")};
  if (text.starts_with("rank:")) return {TraceRanks::Mode::ranks, parse_numbers(text.substr(5), option, "rank")};
  throw InputError("simulate", option, expected + ", got '" + text + "'");
}

void check_trace_ranks(const TraceRanks& selection, int world_size, int pipeline_size, const std::string& option) {
  if (selection.values.empty()) return;
  const bool stages = selection.mode == TraceRanks::Mode::stages;
  const int count = stages ? pipeline_size : world_size;
  if (selection.values.back() >= count)
    throw InputError("simulate", option,
                     std::string(stages ? "pipeline rank " : "rank ") + std::to_string(selection.values.back()) +
                         " does not exist: the job has " + std::to_string(count) +
                         (stages ? " pipeline ranks (0 to " : " ranks (0 to ") + std::to_string(count - 1) + ")");
}

std::vector<int> selected_ranks(const TraceRanks& selection, const Program& program, const Timeline& timeline) {
  check_trace_ranks(selection, program.world_size, program.pipeline_size);
  const std::vector<int>& representative = timeline.representative_of_rank;
  std::vector<int> ranks;
  for (int rank = 0; rank < program.world_size; ++rank) {
    bool shown = false;
    switch (selection.mode) {
      case TraceRanks::Mode::representatives: shown = representative.empty() || representative[rank] == rank; break;
      case TraceRanks::Mode::all: shown = true; break;
      case TraceRanks::Mode::stages:
        shown = std::binary_search(selection.values.begin(), selection.values.end(), program.coords[rank].pp);
        break;
      case TraceRanks::Mode::ranks: shown = std::binary_search(selection.values.begin(), selection.values.end(), rank); break;
    }
    if (shown) ranks.push_back(rank);
  }
  return ranks;
}

}  // namespace simtrain
