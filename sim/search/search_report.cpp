#include "sim/search/search_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "sim/base/text_format.hpp"
#include "sim/search/pareto_svg.hpp"

namespace simtrain {

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// Three significant digits, or whole numbers with thousands separators (up to a quadrillion).
std::string significant(double value) { return value < 1000 || value >= 1e15 ? format("%.3g", value) : with_commas(value); }

// A scenario field by its bare name, from whichever section holds it.
nlohmann::json field(const nlohmann::json& document, const std::string& key) {
  for (const char* section : {"model", "training", "parallelism", "cluster"})
    if (document.contains(section) && document[section].contains(key)) return document[section][key];
  return nullptr;
}

std::string dp_sync_text(const Scenario& s) {
  if (s.parallel.data == 1) return "-";
  if (s.parallel.dp_sync != DpSync::parameter_server) return to_string(s.parallel.dp_sync);
  return "ps x" + std::to_string(s.parallel.parameter_servers);
}

// How long the budget takes, in the unit the table uses.
double time_in_unit(const SearchResult& result, double seconds) {
  return result.per_billion_tokens ? seconds / 3600 : seconds / 86400;
}

std::string time_column(const SearchResult& result) {
  return result.per_billion_tokens ? "hours/1B tok" : "days";
}

std::string cost_column(const SearchResult& result) {
  return (result.cost_unit == "USD" ? "USD" : "GPU-h") + std::string(result.per_billion_tokens ? "/1B tok" : "");
}

// Varied fields the standard columns do not show already.
std::vector<std::string> extra_columns(const SearchResult& result) {
  static const std::set<std::string> shown = {"dp_sync", "parameter_servers", "dp_compression_ratio"};
  std::vector<std::string> extra;
  for (const std::string& key : result.columns)
    if (!shown.count(key)) extra.push_back(key);
  return extra;
}

// Configuration cells of a row: the standard ones, then the extra dimensions.
std::vector<std::string> configuration(const SearchResult& result, const SearchRow& row) {
  const Scenario& s = row.scenario;
  const ParallelConfig& p = s.parallel;
  std::vector<std::string> cells = {s.cluster.gpu.name,
                                    std::to_string(s.cluster.num_gpus),
                                    std::to_string(p.tensor),
                                    std::to_string(p.pipeline),
                                    std::to_string(p.data),
                                    std::to_string(s.virtual_stages()),
                                    std::to_string(s.training.micro_batch_size),
                                    to_string(p.schedule),
                                    std::to_string(p.zero_stage),
                                    to_string(s.training.recompute),
                                    p.sequence_parallel ? "yes" : "no",
                                    dp_sync_text(s),
                                    format("%g", p.dp_compression_ratio)};
  for (const std::string& key : extra_columns(result)) {
    const nlohmann::json value = field(s.document, key);
    cells.push_back(value.is_null() ? "-" : value.is_string() ? value.get<std::string>() : value.dump());
  }
  return cells;
}

std::vector<std::string> configuration_header(const SearchResult& result) {
  std::vector<std::string> header = {"gpu",  "gpus",      "tp", "pp",      "dp",          "vp", "mbs",
                                     "schedule", "zero", "recompute", "sp", "dp_sync", "compression"};
  for (const std::string& key : extra_columns(result)) header.push_back(key);
  return header;
}

// Columns padded to their widest cell, numbers to the right.
std::string aligned(const std::vector<std::vector<std::string>>& table) {
  std::vector<size_t> widths;
  for (const auto& row : table)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      char* end = nullptr;
      std::strtod(row[i].c_str(), &end);
      const bool numeric = row[i] == "-" || (!row[i].empty() && *end == '\0') || row[i].find(',') != std::string::npos;
      const std::string pad(widths[i] - row[i].size(), ' ');
      line += (i ? "  " : "") + (numeric ? pad + row[i] : row[i] + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::vector<std::string> header(const SearchResult& result) {
  std::vector<std::string> h = {"rank"};
  for (const std::string& c : configuration_header(result)) h.push_back(c);
  for (const std::string& c : {std::string("step s"), std::string("TFLOP/s/GPU"), std::string("MFU %"),
                               std::string("bubble %"), std::string("mem GiB"), std::string("free GiB"),
                               time_column(result), cost_column(result)})
    h.push_back(c);
  return h;
}

std::vector<std::string> cells(const SearchResult& result, const SearchRow& row, int rank) {
  std::vector<std::string> c = {std::to_string(rank)};
  for (const std::string& cell : configuration(result, row)) c.push_back(cell);
  const double headroom = row.scenario.cluster.gpu.memory_bytes - row.peak_memory_bytes;
  for (const std::string& cell :
       {format("%.4f", row.figures.step_seconds), format("%.1f", row.figures.model_tflops_per_gpu),
        format("%.1f", row.figures.mfu * 100), format("%.1f", row.figures.bubble_fraction * 100),
        format("%.1f", row.peak_memory_bytes / GiB), format("%.1f", headroom / GiB),
        significant(time_in_unit(result, row.seconds_to_train)), significant(row.cost)})
    c.push_back(cell);
  return c;
}

// RFC 4180: a cell with a comma or a quote is quoted, its quotes doubled.
std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string counts_text(const SearchCounts& n) {
  return grid_text(n) + ", " + std::to_string(n.dominated) + " with needless recompute, " + std::to_string(n.bounded) +
         " pruned by the lower bound; " + std::to_string(n.simulated) + " simulated (" +
         std::to_string(n.cache_hits) + " from an identical simulation)\n";
}

}  // namespace

std::string to_text(const SearchResult& result, int top) {
  std::string out = "simtrain search: ranked by " + to_string(result.objective) + "; time and cost " +
                    (result.per_billion_tokens ? "per 1B tokens (no training.train_tokens)"
                                               : "to train " + format("%.3g", result.budget_tokens) + " tokens") +
                    (result.cost_unit == "USD" ? "" : "; cost in GPU-hours (no price for every GPU type: --price)") +
                    "\n" + counts_text(result.counts) + "\n";
  std::vector<std::vector<std::string>> table = {header(result)};
  const size_t shown = top == 0 ? result.rows.size() : std::min<size_t>(top, result.rows.size());
  for (size_t i = 0; i < shown; ++i) table.push_back(cells(result, result.rows[i], static_cast<int>(i) + 1));
  out += aligned(table);
  out += "\nPareto front, cost against time (fastest first; rank as above):\n";
  std::vector<std::vector<std::string>> front = {header(result)};
  for (int i : result.pareto) front.push_back(cells(result, result.rows[i], i + 1));
  return out + aligned(front);
}

void write_csv(std::ostream& out, const SearchResult& result) {
  std::vector<std::string> h = {"rank"};
  for (const std::string& c : configuration_header(result)) h.push_back(c);
  for (const char* c : {"step_s", "tokens_per_s", "model_tflops_per_gpu", "mfu", "bubble_fraction",
                        "exposed_comm_over_compute", "peak_memory_GiB", "memory_headroom_GiB", "lower_bound_step_s",
                        "seconds_to_train", "cost", "cost_unit", "on_pareto_front"})
    h.push_back(c);
  for (size_t i = 0; i < h.size(); ++i) out << (i ? "," : "") << h[i];
  out << "\n";
  for (size_t r = 0; r < result.rows.size(); ++r) {
    const SearchRow& row = result.rows[r];
    out << r + 1;
    for (const std::string& cell : configuration(result, row)) out << "," << csv_cell(cell);
    const bool front = std::find(result.pareto.begin(), result.pareto.end(), static_cast<int>(r)) != result.pareto.end();
    for (double value : {row.figures.step_seconds, row.figures.tokens_per_second, row.figures.model_tflops_per_gpu,
                         row.figures.mfu, row.figures.bubble_fraction, row.figures.exposed_comm_over_compute,
                         row.peak_memory_bytes / GiB, (row.scenario.cluster.gpu.memory_bytes - row.peak_memory_bytes) / GiB,
                         row.lower_bound_seconds, row.seconds_to_train, row.cost})
      out << "," << format("%.9g", value);
    out << "," << result.cost_unit << "," << (front ? "yes" : "no") << "\n";
  }
}

nlohmann::json to_json(const SearchResult& result) {
  const SearchCounts& n = result.counts;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < result.rows.size(); ++r) {
    const SearchRow& row = result.rows[r];
    const nlohmann::json none = nlohmann::json::object();
    rows.push_back({{"rank", r + 1},
                    {"gpu", row.scenario.cluster.gpu.name},
                    {"num_gpus", row.scenario.cluster.num_gpus},
                    {"parallelism", row.scenario.document.value("parallelism", none)},
                    {"training", row.scenario.document.value("training", none)},
                    {"figures", to_json(row.figures)},
                    {"peak_memory_bytes", row.peak_memory_bytes},
                    {"lower_bound_step_seconds", row.lower_bound_seconds},
                    {"seconds_to_train", row.seconds_to_train},
                    {"cost", row.cost}});
  }
  nlohmann::json front = nlohmann::json::array();
  for (int i : result.pareto) front.push_back(i + 1);
  return {{"objective", to_string(result.objective)},
          {"budget_tokens", result.budget_tokens},
          {"per_billion_tokens", result.per_billion_tokens},
          {"cost_unit", result.cost_unit},
          {"counts",
           {{"enumerated", n.enumerated},
            {"duplicates", n.duplicates},
            {"invalid", n.invalid},
            {"invalid_by_rule", n.invalid_by_rule},
            {"out_of_memory", n.out_of_memory},
            {"needless_recompute", n.dominated},
            {"pruned_by_bound", n.bounded},
            {"simulated", n.simulated},
            {"cache_hits", n.cache_hits}}},
          {"rows", rows},
          {"pareto_front_ranks", front}};
}

void write_pareto_svg(std::ostream& out, const SearchResult& result) {
  std::vector<PlotPoint> points;
  for (size_t r = 0; r < result.rows.size(); ++r) {
    const SearchRow& row = result.rows[r];
    const Scenario& s = row.scenario;
    const bool front = std::find(result.pareto.begin(), result.pareto.end(), static_cast<int>(r)) != result.pareto.end();
    const std::string label = std::to_string(s.cluster.num_gpus) + "x " + s.cluster.gpu.name + " TP" +
                              std::to_string(s.parallel.tensor) + " PP" + std::to_string(s.parallel.pipeline) + " DP" +
                              std::to_string(s.parallel.data);
    points.push_back({time_in_unit(result, row.seconds_to_train), row.cost, front, label});
  }
  const std::string budget = result.per_billion_tokens ? "per 1B tokens" : "to train " + format("%.3g", result.budget_tokens) + " tokens";
  write_pareto_svg(out, points, "simtrain search: cost against time " + budget,
                   "time " + budget + (result.per_billion_tokens ? " (hours)" : " (days)"),
                   "cost " + budget + " (" + (result.cost_unit == "USD" ? "USD" : "GPU-hours") + ")");
}

}  // namespace simtrain
