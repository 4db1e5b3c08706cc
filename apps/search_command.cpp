#include "search_command.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "atomic_file.hpp"
#include "distribution.hpp"
#include "input_error.hpp"
#include "search_report.hpp"

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

// "key=value" -> key (its last dotted part).
std::string key_of(const std::string& assignment, const std::string& option) {
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) throw InputError("search", option + " " + assignment, "expected key=value");
  const std::string key = assignment.substr(0, equals);
  return key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
}

std::string duration(double seconds) {
  char text[32];
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  return text;
}

// "search [#####.....] 120/340 simulated, 2876 pruned, 1m12s left"
class ProgressBar {
public:
  explicit ProgressBar(std::ostream& err) : err_(err), start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (shown_) err_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
  }

  void show(const SearchProgress& p) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const long long total = p.simulated + p.remaining;
    const int filled = total ? static_cast<int>(30 * p.simulated / total) : 0;
    std::string line = "search [" + std::string(filled, '#') + std::string(30 - filled, '.') + "] " +
                       std::to_string(p.simulated) + "/" + std::to_string(total) + " simulated, " +
                       std::to_string(p.pruned) + " pruned";
    if (p.simulated > 0) line += ", " + duration(elapsed / p.simulated * p.remaining) + " left (at most)";
    width_ = std::max(width_, line.size());
    err_ << "\r" << line << std::string(width_ - line.size(), ' ') << std::flush;
    shown_ = true;
  }

private:
  std::ostream& err_;
  std::chrono::steady_clock::time_point start_;
  size_t width_ = 0;
  bool shown_ = false;
};

}  // namespace

SearchCommand::SearchCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "search", "enumerate parallel strategies, cluster sizes and GPU types; simulate those that can win; rank them");
  scenario_.add_to(*command_, false);
  command_->add_option("--gpus", gpu_counts_, "cluster sizes (default: the scenario's)")->delimiter(',')->type_name("N,N,...");
  command_->add_option("--gpu-types", gpu_types_, "GPU types (default: the scenario's)")->delimiter(',')->type_name("GPU,...");
  command_->add_option("--objective", objective_, "what ranks first: time, cost or tokens-per-dollar")
      ->check(CLI::IsMember({"time", "cost", "tokens-per-dollar"}));
  command_->add_option("--top", top_, "rows in the table; the rest need not be simulated (0: all)")->check(CLI::NonNegativeNumber);
  command_->add_option("--vary", varied_, "values of a field to try, replacing the default grid's (repeatable)")
      ->type_name("KEY=V1,V2,...")
      ->allow_extra_args(false);
  command_->add_option("--price", prices_, "USD per GPU-hour of a GPU type (repeatable)")
      ->type_name("GPU=USD")
      ->allow_extra_args(false);
  command_->add_option("--jobs", jobs_, "simulations at once (default: all cores)")->check(CLI::PositiveNumber);
  command_->add_option("--round", round_size_, "configurations simulated between two pruning rounds")
      ->check(CLI::PositiveNumber);
  command_->add_option("--csv", csv_path_, "write every simulated configuration as CSV");
  command_->add_option("--json", json_path_, "write the results as JSON");
  command_->add_option("--pareto-svg", svg_path_, "plot the cost/time Pareto front as SVG");
  command_->add_flag("--quiet", quiet_, "no progress bar");
}

void SearchCommand::run(std::ostream& out, std::ostream& err) const {
  SearchRequest request;
  request.base = scenario_.load();
  request.base_dir = scenario_.base_dir();
  for (const std::string& assignment : scenario_.overrides) request.fixed_keys.push_back(key_of(assignment, "--set"));
  request.gpu_counts = gpu_counts_;
  request.gpu_types = gpu_types_;
  for (const std::string& price : prices_) {
    const std::string gpu = key_of(price, "--price");
    const nlohmann::json usd = parse_value(price.substr(price.find('=') + 1));
    if (!usd.is_number() || usd.get<double>() <= 0) throw InputError("search", "--price " + price, "expected GPU=USD per hour");
    request.prices[gpu] = usd.get<double>();
  }
  for (const std::string& assignment : varied_) {
    Dimension d{key_of(assignment, "--vary"), {}};
    for (const std::string& value : split_top_level(assignment.substr(assignment.find('=') + 1)))
      d.values.push_back(parse_value(value));
    request.dimensions.push_back(d);
  }
  request.objective = objective_named(objective_);
  request.top = top_;
  request.round_size = round_size_;

  const int jobs = jobs_ > 0 ? jobs_ : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const Distribution distribution = start_distribution(local_simulator(jobs));
  struct Leave {
    ~Leave() { stop_distribution(); }
  } leave;
  const bool lead = distribution.rank == 0;
  std::unique_ptr<ProgressBar> bar;
  if (lead && !quiet_ && ::isatty(STDERR_FILENO)) bar = std::make_unique<ProgressBar>(err);
  const SearchResult result =
      run_search(request, distribution.simulator, [&](const SearchProgress& p) { if (bar) bar->show(p); });
  bar.reset();
  if (!lead) return;
  out << to_text(result, top_);
  if (!csv_path_.empty()) write_file_atomically(csv_path_, [&](std::ostream& o) { write_csv(o, result); });
  if (!json_path_.empty()) write_file_atomically(json_path_, [&](std::ostream& o) { o << to_json(result).dump(2) << "\n"; });
  if (!svg_path_.empty()) write_file_atomically(svg_path_, [&](std::ostream& o) { write_pareto_svg(o, result); });
}

}  // namespace simtrain
