#include "sim/program/task_list_difference.hpp"

#include <algorithm>
#include <optional>

#include "sim/program/short_form.hpp"

namespace simtrain {

namespace {

constexpr size_t kContextRows = 3;  // shown either side of the first difference

std::optional<size_t> first_kind_difference(const Program& program, int rank, int other_rank) {
  const RankTaskIds a = program.rank_tasks(rank), b = program.rank_tasks(other_rank);
  // Ranks reading one stored list differ in the ranks and groups they name only.
  if (program.tasks.source_rank(rank) == program.tasks.source_rank(other_rank)) return std::nullopt;
  const size_t common = std::min(a.size(), b.size());
  for (size_t i = 0; i < common; ++i)
    if (program.tasks[a[i]].kind != program.tasks[b[i]].kind) return i;
  if (a.size() != b.size()) return common;
  return std::nullopt;
}

std::string padded(const std::string& text, size_t width) {
  return text + std::string(width - std::min(width, text.size()), ' ');
}

}  // namespace

std::string task_list_difference(const Program& program, int rank, int other_rank) {
  const std::optional<size_t> difference = first_kind_difference(program, rank, other_rank);
  if (!difference) return "";
  const std::vector<std::string> left = short_forms(program, rank), right = short_forms(program, other_rank);
  const size_t begin = *difference - std::min(*difference, kContextRows);
  const size_t end = std::min(std::max(left.size(), right.size()), *difference + kContextRows + 1);
  auto entry = [](const std::vector<std::string>& forms, size_t i) { return i < forms.size() ? forms[i] : "(end)"; };

  const std::string left_header = "rank " + std::to_string(rank);
  size_t left_width = left_header.size();
  for (size_t i = begin; i < end; ++i) left_width = std::max(left_width, entry(left, i).size());
  const size_t number_width = std::to_string(end - 1).size();
  std::string text = "rank " + std::to_string(rank) + " (" + std::to_string(left.size()) + " tasks) and rank " +
                     std::to_string(other_rank) + " (" + std::to_string(right.size()) +
                     " tasks) first differ at position " + std::to_string(*difference) + ":\n";
  text += std::string(number_width + 4, ' ') + padded(left_header, left_width) + " rank " +
          std::to_string(other_rank) + "\n";
  if (begin > 0) text += "  ...\n";
  for (size_t i = begin; i < end; ++i)
    text += (i == *difference ? "> " : "  ") + padded(std::to_string(i), number_width) + "  " +
            padded(entry(left, i), left_width) + " " + entry(right, i) + "\n";
  if (end < std::max(left.size(), right.size())) text += "  ...\n";
  return text;
}

}  // namespace simtrain
