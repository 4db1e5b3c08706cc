#pragma once
// simtrain search: the parallel strategies (and cluster sizes and GPU types)
// of a scenario, enumerated; those that parse_scenario refuses, that do not
// fit in memory, or that cannot reach the top of the table nor the cost/time
// Pareto front are pruned without simulating them; the rest are simulated
// and ranked.
//
// Pruning by a bound: configurations are simulated in rounds of
// SearchRequest::round_size, most promising first (step_lower_bound_seconds).
// Before each round, one whose bound already exceeds the top-K'th simulated
// objective, and whose bounds on time and cost are both beaten by one
// simulated configuration, is dropped: it can be neither in the table nor on
// the front. Rounds do not depend on how many processes or threads simulate,
// so neither does the output.
//
// Nothing the user asked for is dropped without a word: a GPU count, a GPU
// type or one of several --vary values with which no configuration is valid
// and fits in memory is refused (InputError, with what became of its grid
// points, the invalid ones by the rule that refused them), and so is a grid
// where none is.
#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace simtrain {

enum class Objective { time, cost, tokens_per_dollar };
Objective objective_named(const std::string& name);  // "time", "cost", "tokens-per-dollar"
std::string to_string(Objective objective);

// One --gpus value: a whole number from 1 to limits::max_gpus ("1e3" is
// 1000). Throws InputError naming --gpus.
int64_t gpu_count_named(const std::string& text);

// A scenario field the search varies (its bare name, as --set takes it, or
// "virtual_stages": interleaving with that many chunks per pipeline rank).
struct Dimension {
  std::string key;
  std::vector<nlohmann::json> values;
};

// The dimension a --set or --vary key names: "training.micro_batch_size" ->
// "micro_batch_size" (the bare name, as the default grid's); a key deeper
// than a section's field stays whole ("cluster.topology.nic_Gbps").
std::string dimension_key(const std::string& written_key);
// Whether a dimension varies the cluster's hardware: its topology (or one of
// the topology's fields) or its GPU type.
bool is_hardware_key(const std::string& key);

// Whether `--set set_key=...` fixes what the dimension `dimension_key` varies.
bool sets_dimension(const std::string& set_key, const std::string& dimension_key);

struct SearchRequest {
  Scenario base;         // as loaded, --set applied
  std::string base_dir;  // for the paths the scenario names
  std::vector<std::string> fixed_keys;    // set by the user: not varied
  std::vector<int64_t> gpu_counts;        // empty: the scenario's
  std::vector<std::string> gpu_types;     // empty: the scenario's
  std::map<std::string, double> prices;   // USD per GPU-hour by GPU name, beside cluster.price_per_gpu_hour
  std::vector<Dimension> dimensions;      // replace the default grid's, or add to it
  // A GPU type whose scenario topology was built for other GPUs runs on the
  // built-in system built for it, where there is one (fabric_match.hpp).
  bool fabric_follows_gpu = false;
  Objective objective = Objective::time;
  int top = 10;          // rows of the table; 0: every simulated configuration (no bound pruning)
  int round_size = 16;   // configurations simulated between two pruning rounds
  // Rows whose objective is within this fraction of a better row's tie with
  // it (the text table ranks them alike).
  double tie_fraction = 0.01;
};

// The default grid for a scenario (README, "Search"): TP up to a node, PP
// in powers of two, 1 or 2 virtual stages, micro-batches 1/2/4, 1F1B or
// ZB-H1, ZeRO 0/1/2, each recompute policy, sequence parallelism on and off;
// for a model with experts, expert parallelism in powers of two dividing them;
// for a long context, context parallelism in powers of two up to 16 whose
// load-balanced split (2 x CP chunks) divides the sequence.
std::vector<Dimension> default_dimensions(const Scenario& scenario);
// Whether the default grid varies context parallelism (and the table shows
// it): a long-context scenario.
bool searches_context_parallel(const Scenario& scenario);

// What a simulation gives a row (also what MPI ranks exchange).
struct StepFigures {
  double step_seconds = 0;
  double tokens_per_second = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double bubble_fraction = 0;
  double exposed_comm_over_compute = 0;  // the most exposed rank's
  std::string error;                     // the simulation failed
};
nlohmann::json to_json(const StepFigures& figures);
StepFigures step_figures_from_json(const nlohmann::json& json);

struct SearchRow {
  int index = 0;  // in enumeration order (ties rank by it)
  Scenario scenario;
  StepFigures figures;
  double peak_memory_bytes = 0;
  double lower_bound_seconds = 0;
  double seconds_to_train = 0;  // the token budget (SearchResult::budget_tokens) at this throughput
  double cost = 0;              // of that, in SearchResult::cost_unit
  double objective = 0;         // lower is better
  bool baseline = false;        // the scenario's own configuration
};

struct SearchCounts {
  long long enumerated = 0;     // grid points
  long long duplicates = 0;     // the same configuration as an earlier point (a field that does not apply)
  long long invalid = 0;        // refused by parse_scenario
  std::map<std::string, long long> invalid_by_rule;  // "cluster.num_gpus must be a multiple of ..." -> points it refused
  long long out_of_memory = 0;
  long long dominated = 0;      // more recompute than needed to fit (it never makes a step faster)
  long long bounded = 0;        // pruned by the lower bound
  long long simulated = 0;      // configurations with figures (cache hits included)
  long long cache_hits = 0;     // figures of an identical earlier simulation (ZeRO 1 and 2 share them)
};

// "N grid points: D duplicates, I invalid (n1 rule; n2 rule), O out of memory"
std::string grid_text(const SearchCounts& counts);

struct SearchResult {
  Objective objective = Objective::time;
  std::vector<std::string> columns;  // dimension keys shown beside the standard ones
  std::vector<SearchRow> rows;       // simulated, best first
  std::vector<int> pareto;           // rows on the cost/time front, fastest first
  SearchCounts counts;
  double budget_tokens = 0;          // training.train_tokens, else 1e9 (per_billion_tokens)
  bool per_billion_tokens = false;
  std::string cost_unit;             // "USD", or "GPU-hours" when a GPU type has no price
  std::map<std::string, double> prices;  // USD per GPU-hour by GPU type, where cost_unit is USD
  double tie_fraction = 0.01;        // SearchRequest::tie_fraction
  std::string baseline_absent;       // why no row is the scenario's own configuration ("" if one is)
  std::vector<std::string> warnings; // a GPU type on a topology built for others (fabric_mismatch), or where it followed
};

// The cells that tell a configuration apart in the tables: GPU type and
// count, tp, pp, dp, virtual stages, micro-batch size, schedule, ZeRO stage,
// recompute, sequence parallelism, data-parallel synchronisation and
// compression, expert parallelism for a model with experts, then the fields
// of `extra_columns`.
std::vector<std::string> configuration_cells(const Scenario& scenario, const std::vector<std::string>& extra_columns);
inline constexpr size_t kZeroStageCell = 8;  // the ZeRO stage's place among configuration_cells
// SearchResult::columns less those configuration_cells shows already.
std::vector<std::string> extra_columns(const SearchResult& result);

struct SearchProgress {
  long long simulated = 0;
  long long remaining = 0;  // at most this many still to simulate
  long long pruned = 0;
};

// Simulates scenarios, returning their figures in order. The local one runs
// `jobs` simulations at once (each in a forked child); an MPI one spreads
// them over ranks. `on_done` is called after each of this process's own.
using BatchSimulator =
    std::function<std::vector<StepFigures>(const std::vector<const Scenario*>& batch, const std::function<void()>& on_done)>;
BatchSimulator local_simulator(int jobs, const std::atomic<bool>* cancel = nullptr);

// Throws InputError for a bad request (naming the option) or one of which
// nothing is valid and fits, Interrupted if cancelled.
SearchResult run_search(const SearchRequest& request, const BatchSimulator& simulator,
                        const std::function<void(const SearchProgress&)>& on_progress = {});

}  // namespace simtrain
