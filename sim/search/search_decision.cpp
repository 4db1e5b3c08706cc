#include "sim/search/search_decision.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

// What ZeRO twins share: rows alike but for their ZeRO stage, with the same
// step and cost (the stage changed nothing that was timed) have equal keys.
std::tuple<std::vector<std::string>, double, double> zero_twin_key(const SearchResult& result, const SearchRow& row) {
  std::vector<std::string> cells = configuration_cells(row.scenario, extra_columns(result));
  cells[kZeroStageCell] = "";
  return {cells, row.figures.step_seconds, row.cost};
}

bool ties(const SearchResult& result, const SearchRow& leader, const SearchRow& row) {
  return row.objective <= leader.objective * (1 + result.tie_fraction);
}

std::string step_text(double seconds) { return with_commas(seconds * 1e3, 1) + " ms"; }  // "5,458.4 ms"

std::string percent(double fraction) { return format("%.1f %%", fraction * 100); }

// Whether the rows differ in GPU type or count: summaries name them only then.
bool clusters_differ(const SearchResult& result) {
  std::set<std::pair<std::string, int64_t>> clusters;
  for (const SearchRow& row : result.rows) clusters.insert({row.scenario.cluster.gpu.name, row.scenario.cluster.num_gpus});
  return clusters.size() > 1;
}

// Whether the rows run on topologies the table does not show (--fabric-follows-gpu): summaries name them then.
bool topologies_differ(const SearchResult& result) {
  std::set<std::string> names;
  for (const SearchRow& row : result.rows) names.insert(row.scenario.cluster.topology.name);
  const std::vector<std::string> extra = extra_columns(result);
  return names.size() > 1 && std::find(extra.begin(), extra.end(), "topology") == extra.end();
}

std::string cost_text(const SearchResult& result, double cost) {
  const std::string per = result.per_billion_tokens ? " per 1B tokens" : " to train";
  return significant(cost) + (result.cost_unit == "USD" ? " USD" : " GPU-hours") + per;
}

// "TP2 PP8 DP64, zb_h1, micro-batch 1, ZeRO 1/2, recompute none, SP" for a
// line's rows (the GPU count and type first when `with_cluster`).
std::string configuration_summary(const SearchResult& result, const TableLine& line, bool with_cluster) {
  const Scenario& s = result.rows[line.rows.front()].scenario;
  const ParallelConfig& p = s.parallel;
  std::string text = with_cluster ? std::to_string(s.cluster.num_gpus) + " x " + s.cluster.gpu.name : "";
  if (with_cluster && topologies_differ(result)) text += " on " + s.cluster.topology.name;
  if (with_cluster) text += ", ";
  text += "TP" + std::to_string(p.tensor) + " PP" + std::to_string(p.pipeline) + " DP" + std::to_string(p.data);
  if (s.virtual_stages() > 1) text += " VP" + std::to_string(s.virtual_stages());
  if (s.model.has_experts()) text += " EP" + std::to_string(p.expert);
  if (p.context > 1) text += " CP" + std::to_string(p.context);
  if (p.pipeline > 1) text += ", " + to_string(p.schedule);
  text += ", micro-batch " + std::to_string(s.training.micro_batch_size);
  if (p.data > 1) {
    text += ", ZeRO ";
    for (size_t i = 0; i < line.rows.size(); ++i) {
      if (i > 0) text += "/";
      text += std::to_string(result.rows[line.rows[i]].scenario.parallel.zero_stage);
    }
  }
  text += ", recompute " + to_string(s.training.recompute);
  if (p.tensor > 1 && p.sequence_parallel) text += ", SP";
  // Varied hardware (--vary cluster.topology.nic_Gbps=...) is part of what the sentence recommends.
  for (const std::string& key : extra_columns(result))
    if (is_hardware_key(key)) text += ", " + key + "=" + configuration_cells(s, {key}).back();
  return text;
}

// The line holding row `row`.
const TableLine& line_of(const std::vector<TableLine>& lines, int row) {
  return *std::find_if(lines.begin(), lines.end(), [&](const TableLine& line) {
    return std::find(line.rows.begin(), line.rows.end(), row) != line.rows.end();
  });
}

}  // namespace

std::vector<TableLine> table_lines(const SearchResult& result, int top) {
  const int shown = top == 0 ? static_cast<int>(result.rows.size()) : std::min<int>(top, static_cast<int>(result.rows.size()));
  std::vector<TableLine> lines;
  std::map<std::tuple<std::vector<std::string>, double, double>, size_t> line_of_key;
  for (int i = 0; i < shown; ++i) {
    auto [it, added] = line_of_key.try_emplace(zero_twin_key(result, result.rows[i]), lines.size());
    if (added)
      lines.push_back({{i}, ""});
    else
      lines[it->second].rows.push_back(i);
  }
  for (size_t first = 0; first < lines.size();) {
    const SearchRow& leader = result.rows[lines[first].rows.front()];
    size_t end = first + 1;
    while (end < lines.size() && ties(result, leader, result.rows[lines[end].rows.front()])) ++end;
    for (size_t l = first; l < end; ++l)
      lines[l].rank = std::to_string(lines[first].rows.front() + 1) + (end - first > 1 ? "=" : "");
    first = end;
  }
  auto marked = [&](const TableLine& line) {
    return std::any_of(line.rows.begin(), line.rows.end(), [&](int r) { return result.rows[r].baseline; });
  };
  if (!std::any_of(lines.begin(), lines.end(), marked))
    for (size_t r = 0; r < result.rows.size(); ++r)
      if (result.rows[r].baseline) lines.push_back({{static_cast<int>(r)}, std::to_string(r + 1), true});
  return lines;
}

std::string decision_text(const SearchResult& result) {
  if (result.rows.empty()) return "";
  std::vector<TableLine> lines = table_lines(result, 0);
  const bool by_time = result.objective == Objective::time;
  const bool with_cluster = clusters_differ(result);
  auto summary = [&](int row) {
    const SearchRow& r = result.rows[row];
    return configuration_summary(result, line_of(lines, row), with_cluster) + ": " + step_text(r.figures.step_seconds) +
           " per step, " + cost_text(result, r.cost);
  };
  const SearchRow& best = result.rows.front();
  std::string text = "Best for " + to_string(result.objective) + ": " + summary(0);
  auto baseline = std::find_if(result.rows.begin(), result.rows.end(), [](const SearchRow& r) { return r.baseline; });
  const int baseline_row = static_cast<int>(baseline - result.rows.begin());
  if (baseline != result.rows.end() && &line_of(lines, baseline_row) == &lines.front())
    text += "; it is the scenario's own configuration";
  else if (baseline != result.rows.end())
    text += "; " + percent(1 - best.objective / baseline->objective) + (by_time ? " faster" : " cheaper") +
            " than the scenario's own " + summary(baseline_row) + " (rank " + std::to_string(baseline_row + 1) + ")";
  text += ".";
  const auto tied = std::count_if(lines.begin() + 1, lines.end(), [&](const TableLine& l) { return l.rank == lines.front().rank; });
  if (tied > 0)
    text += " " + std::to_string(tied) + " other configuration" + (tied > 1 ? "s are" : " is") + " within " +
            format("%g %%", result.tie_fraction * 100) + " of it (ranked " + lines.front().rank + ").";
  // The other end of the Pareto front: the cheapest when ranking by time, the fastest when by cost.
  const int other = by_time ? result.pareto.back() : result.pareto.front();
  if (&line_of(lines, other) != &lines.front())
    text += std::string(by_time ? " Cheapest: " : " Fastest: ") + summary(other) + " (rank " + std::to_string(other + 1) + ").";
  if (!result.baseline_absent.empty())
    text += " The scenario's own configuration is not ranked: " + result.baseline_absent + ".";
  return text;
}

}  // namespace simtrain
