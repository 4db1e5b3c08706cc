#include "search_command.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "distribution.hpp"
#include "progress_line.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/option_checks.hpp"
#include "sim/base/output_files.hpp"
#include "sim/search/search_report.hpp"
#include "sim/step/scenario_summary.hpp"

namespace simtrain {

namespace {

// "a,b,[1,2]" -> {"a", "b", "[1,2]"}: commas inside brackets or braces stay.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : text) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

nlohmann::json parse_value(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    return text;  // bare words such as zb_h1
  }
}

// "training.key=value" -> "training.key", as written.
std::string written_key(const std::string& assignment, const std::string& option) {
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) throw InputError("search", option + " " + assignment, "expected key=value");
  return assignment.substr(0, equals);
}

// "training.key=value" -> key; "cluster.topology.nic_Gbps=800" -> cluster.topology.nic_Gbps (dimension_key).
std::string key_of(const std::string& assignment, const std::string& option) {
  return dimension_key(written_key(assignment, option));
}

// Every item of every occurrence of a comma-separated option.
std::vector<std::string> items(const std::vector<std::string>& lists) {
  std::vector<std::string> all;
  for (const std::string& list : lists)
    for (const std::string& item : split_top_level(list)) all.push_back(item);
  return all;
}

// A field the search varies is not also fixed by --set: one of the two would be lost.
void refuse_conflicts(const std::vector<std::string>& sets, const std::vector<std::pair<std::string, std::string>>& varied) {
  for (const std::string& set : sets) {
    const std::string set_key = key_of(set, "--set");
    if (set_key == "data_parallel_size")
      throw InputError("search", "--set " + set,
                       "the search derives data_parallel_size from the GPU count and each strategy's tensor and pipeline sizes");
    for (const auto& [option, key] : varied)
      if (sets_dimension(set_key, key)) throw InputError("search", option, "conflicts with --set " + set);
  }
}

// "search: 26 simulations in 14.2 s, 1.8 per second" (on standard error: the
// figures on standard output depend on the scenario alone).
void report_speed(std::ostream& err, const SearchCounts& counts, std::chrono::steady_clock::duration elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const long long simulations = counts.simulated - counts.cache_hits;
  char line[160];
  std::snprintf(line, sizeof line, "search: %lld simulations in %.1f s, %.1f per second\n", simulations, seconds,
                seconds > 0 ? static_cast<double>(simulations) / seconds : 0.0);
  err << line;
}

}  // namespace

SearchCommand::SearchCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "search", "enumerate parallel strategies, cluster sizes and GPU types; simulate those that can win; rank them");
  scenario_.add_to(*command_, false);
  command_->add_option("--gpus", gpu_counts_, "cluster sizes (default: the scenario's)")
      ->type_name("N,N,...")
      ->allow_extra_args(false);
  command_->add_option("--gpu-types", gpu_types_, "GPU types (default: the scenario's)")
      ->type_name("GPU,...")
      ->allow_extra_args(false);
  command_->add_option("--objective", objective_, "what ranks first: time, cost or tokens-per-dollar")
      ->check(CLI::IsMember({"time", "cost", "tokens-per-dollar"}));
  command_->add_option("--top", top_, "rows in the table; the rest need not be simulated (0: all)")->check(at_least(0));
  command_->add_option("--vary", varied_, "values of a field to try, replacing the default grid's (repeatable)")
      ->type_name("KEY=V1,V2,...")
      ->allow_extra_args(false);
  command_->add_option("--price", prices_, "USD per GPU-hour of a GPU type (repeatable)")
      ->type_name("GPU=USD")
      ->allow_extra_args(false);
  command_->add_option("--tie", tie_percent_,
                       "rows within this many percent of a better one rank alike (default 1: what one step time "
                       "cannot tell apart)")
      ->check(between(0, 99));
  command_->add_option("--jobs", jobs_, "simulations at once (default: all cores)")->check(at_least(1));
  command_->add_option("--round", round_size_, "configurations simulated between two pruning rounds")
      ->check(at_least(1));
  command_->add_option("--csv", csv_path_, "write every simulated configuration as CSV; - for standard output");
  command_->add_option("--json", json_path_, "write the results as JSON; - for standard output");
  command_->add_option("--pareto-svg", svg_path_, "plot the cost/time Pareto front as SVG");
  command_->add_flag("--fabric-follows-gpu", fabric_follows_gpu_,
                     "run each GPU type on the built-in system built for it where the scenario's topology was built for "
                     "another (DGX A100's for A100, ...)");
  command_->add_flag("--quiet", quiet_, "no progress bar");
  force_.add_to(*command_);
}

void SearchCommand::run(std::ostream& out, std::ostream& err) const {
  OutputFiles outputs(out, force_.existing_files());
  outputs.add("--csv", csv_path_);
  outputs.add("--json", json_path_);
  outputs.add("--pareto-svg", svg_path_);
  SearchRequest request;
  request.base = scenario_.load();
  outputs.refuse_inputs(request.base.files_read);
  request.base_dir = scenario_.base_dir();
  for (const std::string& assignment : scenario_.overrides) request.fixed_keys.push_back(key_of(assignment, "--set"));
  for (const std::string& gpus : items(gpu_counts_)) request.gpu_counts.push_back(gpu_count_named(gpus));
  request.gpu_types = items(gpu_types_);
  for (const std::string& price : prices_) {
    const std::string gpu = written_key(price, "--price");
    const nlohmann::json usd = parse_value(price.substr(price.find('=') + 1));
    if (!usd.is_number() || usd.get<double>() <= 0) throw InputError("search", "--price " + price, "expected GPU=USD per hour");
    if (!request.prices.emplace(gpu, usd.get<double>()).second) throw InputError("search", "--price " + gpu, "given twice");
  }
  std::vector<std::pair<std::string, std::string>> varied;  // option, field
  if (!gpu_counts_.empty()) varied.push_back({"--gpus", "num_gpus"});
  if (!gpu_types_.empty()) varied.push_back({"--gpu-types", "gpu"});
  for (const std::string& assignment : varied_) {
    Dimension d{key_of(assignment, "--vary"), {}};
    for (const std::string& value : split_top_level(assignment.substr(assignment.find('=') + 1)))
      d.values.push_back(parse_value(value));
    request.dimensions.push_back(d);
    varied.push_back({"--vary " + written_key(assignment, "--vary"), d.key});
  }
  refuse_conflicts(scenario_.overrides, varied);
  request.fabric_follows_gpu = fabric_follows_gpu_;
  request.objective = objective_named(objective_);
  request.top = top_;
  request.round_size = round_size_;
  request.tie_fraction = tie_percent_ / 100;

  const int jobs = jobs_ > 0 ? jobs_ : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const Distribution distribution = start_distribution(local_simulator(jobs));
  struct Leave {
    ~Leave() { stop_distribution(); }
  } leave;
  const bool lead = distribution.rank == 0;
  ProgressLine line(err, lead && progress_wanted(quiet_));
  line.show("search: enumerating the candidates");
  const auto start = std::chrono::steady_clock::now();
  const SearchResult result = run_search(request, distribution.simulator, [&](const SearchProgress& p) {
    line.show(search_progress_text(p, line.elapsed_seconds()));
  });
  line.clear();  // before the results
  if (!lead) return;
  for (const std::string& warning : result.warnings) err << "simtrain search: warning: " << warning << "\n";
  if (!quiet_) report_speed(err, result.counts, std::chrono::steady_clock::now() - start);
  std::ostream& text = outputs.writes_standard_output() ? err : out;
  text << "searched around the scenario as given (after --set):\n";
  const Workload base_workload = build_workload(request.base);
  for (const std::string& line : scenario_summary_lines(request.base, base_workload)) text << line << "\n";
  text << "\n" << to_text(result, top_);
  nlohmann::ordered_json document = {{"scenario", scenario_summary_json(request.base, base_workload)}};
  document.update(nlohmann::ordered_json(to_json(result)));
  outputs.write({{"--csv", [&](std::ostream& o) { write_csv(o, result); }},
                 {"--json", [&](std::ostream& o) { o << document.dump(2) << "\n"; }},
                 {"--pareto-svg", [&](std::ostream& o) { write_pareto_svg(o, result); }}});
}

}  // namespace simtrain
