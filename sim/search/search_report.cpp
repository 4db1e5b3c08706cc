#include "sim/search/search_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <set>

#include "sim/base/text_format.hpp"
#include "sim/search/pareto_svg.hpp"
#include "sim/search/search_decision.hpp"

namespace simtrain {

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// A scenario field by its bare name, from whichever section holds it.
nlohmann::json field(const nlohmann::json& document, const std::string& key) {
  if (key.find('.') != std::string::npos) {  // a dotted path: cluster.topology.nic_Gbps
    std::string path = "/" + key;
    std::replace(path.begin(), path.end(), '.', '/');
    const nlohmann::json::json_pointer pointer(path);
    return document.contains(pointer) ? document.at(pointer) : nullptr;
  }
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

std::vector<std::string> configuration_header(const SearchResult& result) {
  std::vector<std::string> header = {"gpu",  "gpus",      "tp", "pp",      "dp",          "vp", "mbs",
                                     "schedule", "zero", "recompute", "sp", "dp_sync", "compression"};
  if (!result.rows.empty() && result.rows.front().scenario.model.has_experts()) header.push_back("ep");
  if (!result.rows.empty() && searches_context_parallel(result.rows.front().scenario)) header.push_back("cp");
  for (const std::string& key : extra_columns(result)) header.push_back(key);
  return header;
}

std::vector<std::string> configuration(const SearchResult& result, const SearchRow& row) {
  return configuration_cells(row.scenario, extra_columns(result));
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
      const bool numeric = row[i] == "-" || row[i].ends_with("=") || (!row[i].empty() && *end == '\0') || row[i].find(',') != std::string::npos;
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
  for (const std::string& c : {std::string("step ms"), std::string("TFLOP/s/GPU"), std::string("MFU %"),
                               std::string("bubble %"), std::string("mem GiB"), std::string("free GiB"),
                               time_column(result), cost_column(result), std::string("note")})
    h.push_back(c);
  return h;
}

// The fewest decimals (1 to 4) at which lines of different steps print differently.
int step_decimals(const SearchResult& result, const std::vector<TableLine>& lines) {
  for (int decimals = 1;; ++decimals) {
    bool apart = true;
    for (size_t l = 1; l < lines.size(); ++l) {
      const double a = result.rows[lines[l - 1].rows.front()].figures.step_seconds * 1e3;
      const double b = result.rows[lines[l].rows.front()].figures.step_seconds * 1e3;
      apart = apart && (a == b || with_commas(a, decimals) != with_commas(b, decimals));
    }
    if (apart || decimals == 4) return decimals;
  }
}

// A table line's cells: its first row's, the ZeRO stages and memory of all its rows.
std::vector<std::string> cells(const SearchResult& result, const TableLine& line, int step_decimals) {
  const SearchRow& row = result.rows[line.rows.front()];
  std::vector<std::string> c = {line.rank};
  for (const std::string& cell : configuration(result, row)) c.push_back(cell);
  std::vector<std::string> zero, memory, headroom;
  std::string note;
  for (int r : line.rows) {
    const SearchRow& merged = result.rows[r];
    zero.push_back(std::to_string(merged.scenario.parallel.zero_stage));
    memory.push_back(format("%.1f", merged.peak_memory_bytes / GiB));
    headroom.push_back(format("%.1f", (merged.scenario.cluster.gpu.memory_bytes - merged.peak_memory_bytes) / GiB));
    if (merged.baseline) note = "the scenario's own";
  }
  if (line.rows.size() > 1) c[1 + kZeroStageCell] = joined(zero, ",");  // after the rank
  for (const std::string& cell :
       {with_commas(row.figures.step_seconds * 1e3, step_decimals), format("%.1f", row.figures.model_tflops_per_gpu), format("%.1f", row.figures.mfu * 100),
        format("%.1f", row.figures.bubble_fraction * 100), joined(memory, "/"), joined(headroom, "/"),
        significant(time_in_unit(result, row.seconds_to_train)), significant(row.cost), note})
    c.push_back(cell);
  return c;
}

// Words of `text` in lines of at most `width` characters.
std::string wrapped(const std::string& text, size_t width) {
  std::string out, line, word;
  std::istringstream words(text);
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) out += line + "\n", line.clear();
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line + "\n";
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

// "$3.00/GPU-hour (H100-SXM), $4.00 (H200)".
std::string prices_text(const std::map<std::string, double>& prices) {
  std::string text;
  for (const auto& [gpu, usd] : prices)
    text += (text.empty() ? format("$%.2f/GPU-hour", usd) : format(", $%.2f", usd)) + " (" + gpu + ")";
  return text;
}

}  // namespace

std::vector<std::string> extra_columns(const SearchResult& result) {
  static const std::set<std::string> shown = {"dp_sync", "parameter_servers", "dp_compression_ratio"};
  std::vector<std::string> extra;
  for (const std::string& key : result.columns)
    if (!shown.count(key)) extra.push_back(key);
  return extra;
}

std::vector<std::string> configuration_cells(const Scenario& s, const std::vector<std::string>& extra_columns) {
  const ParallelConfig& p = s.parallel;
  // "-" where the field does not apply: a schedule without pipeline stages,
  // sequence parallelism without tensor parallelism, ZeRO without data parallelism.
  std::vector<std::string> cells = {s.cluster.gpu.name,
                                    std::to_string(s.cluster.num_gpus),
                                    std::to_string(p.tensor),
                                    std::to_string(p.pipeline),
                                    std::to_string(p.data),
                                    std::to_string(s.virtual_stages()),
                                    std::to_string(s.training.micro_batch_size),
                                    p.pipeline > 1 ? to_string(p.schedule) : "-",
                                    p.data > 1 ? std::to_string(p.zero_stage) : "-",
                                    to_string(s.training.recompute),
                                    p.tensor == 1 ? "-" : p.sequence_parallel ? "yes" : "no",
                                    dp_sync_text(s),
                                    format("%g", p.dp_compression_ratio)};
  if (s.model.has_experts()) cells.push_back(std::to_string(p.expert));
  if (searches_context_parallel(s)) cells.push_back(std::to_string(p.context));
  for (const std::string& key : extra_columns) {
    const nlohmann::json value = field(s.document, key);
    cells.push_back(value.is_null() ? "-" : value.is_string() ? value.get<std::string>() : value.dump());
  }
  return cells;
}

std::string to_text(const SearchResult& result, int top) {
  std::string out = wrapped(decision_text(result), 100) + "\n" + "simtrain search: ranked by " + to_string(result.objective) +
                    "; time and cost " +
                    (result.per_billion_tokens ? "per 1B tokens (no training.train_tokens)"
                                               : "to train " + format("%.3g", result.budget_tokens) + " tokens") +
                    (result.cost_unit == "USD" ? "; cost in USD at " + prices_text(result.prices)
                                               : "; cost in GPU-hours (no price for every GPU type: --price)") +
                    "; rows within " + format("%g", result.tie_fraction * 100) + " % of a better one rank alike (=)\n" +
                    counts_text(result.counts) + "\n";
  const std::vector<TableLine> lines = table_lines(result, top);
  const int decimals = step_decimals(result, lines);
  std::vector<std::vector<std::string>> table = {header(result)};
  for (size_t l = 0; l < lines.size(); ++l) {
    if (lines[l].after_gap) table.push_back({"..."});
    table.push_back(cells(result, lines[l], decimals));
  }
  out += aligned(table);
  out += "\nPareto front, cost against time (fastest first; rank as above):\n";
  std::vector<std::vector<std::string>> front = {header(result)};
  for (int i : result.pareto) front.push_back(cells(result, {{i}, std::to_string(i + 1)}, decimals));
  return out + aligned(front);
}

void write_csv(std::ostream& out, const SearchResult& result) {
  std::vector<std::string> h = {"rank"};
  for (const std::string& c : configuration_header(result)) h.push_back(c);
  for (const char* c : {"step_s", "tokens_per_s", "model_tflops_per_gpu", "mfu", "bubble_fraction",
                        "exposed_comm_over_compute", "peak_memory_GiB", "memory_headroom_GiB", "lower_bound_step_s",
                        "seconds_to_train", "cost", "cost_unit", "on_pareto_front", "scenario_own"})
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
    out << "," << result.cost_unit << "," << (front ? "yes" : "no") << "," << (row.baseline ? "yes" : "no") << "\n";
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
                    {"topology", row.scenario.document.at("cluster").at("topology")},  // a name, or the object --vary changed
                    {"figures", to_json(row.figures)},
                    {"peak_memory_bytes", row.peak_memory_bytes},
                    {"lower_bound_step_seconds", row.lower_bound_seconds},
                    {"seconds_to_train", row.seconds_to_train},
                    {"cost", row.cost},
                    {"scenario_own", row.baseline}});
  }
  nlohmann::json front = nlohmann::json::array();
  for (int i : result.pareto) front.push_back(i + 1);
  return {{"decision", decision_text(result)},
          {"scenario_own_absent", result.baseline_absent},
          {"warnings", result.warnings},
          {"tie_fraction", result.tie_fraction},
          {"objective", to_string(result.objective)},
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
