#include "sim/search/search.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "sim/base/input_error.hpp"
#include "sim/search/search_grid.hpp"

namespace simtrain {

namespace {

std::string describe(const Scenario& s) {
  const nlohmann::json none = nlohmann::json::object();
  return s.cluster.gpu.name + " x" + std::to_string(s.cluster.num_gpus) + " " + s.document.value("parallelism", none).dump() +
         " " + s.document.value("training", none).dump();
}

class Search {
public:
  Search(const SearchRequest& request, const BatchSimulator& simulator,
         const std::function<void(const SearchProgress&)>& on_progress)
      : req_(request), simulate_(simulator), on_progress_(on_progress) {
    result_.objective = req_.objective;
    result_.budget_tokens = req_.base.training.train_tokens > 0 ? req_.base.training.train_tokens : 1e9;
    result_.per_billion_tokens = req_.base.training.train_tokens <= 0;
    result_.tie_fraction = req_.tie_fraction;
    if (!(req_.tie_fraction >= 0 && req_.tie_fraction < 1)) throw InputError("search", "--tie", "must be from 0 to 100 %");
    if (req_.round_size < 1) throw InputError("search", "--round", "must be at least 1");
    if (req_.top < 0) throw InputError("search", "--top", "must be at least 0");
  }

  SearchResult run() {
    SearchGrid grid = enumerate_grid(req_, result_.budget_tokens);
    result_.columns = std::move(grid.columns);
    result_.warnings = std::move(grid.warnings);
    result_.cost_unit = std::move(grid.cost_unit);
    result_.baseline_absent = std::move(grid.baseline_absent);
    result_.counts = grid.counts;
    prices_ = std::move(grid.prices);
    if (result_.cost_unit == "USD") result_.prices = prices_;
    std::vector<Candidate>& candidates = grid.candidates;
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.bound_objective < b.bound_objective;
    });
    simulate_in_rounds(candidates);
    rank();
    return std::move(result_);
  }

private:
  double kth_objective() const {
    if (req_.top == 0 || static_cast<int>(result_.rows.size()) < req_.top) return std::numeric_limits<double>::infinity();
    std::vector<double> objectives;
    for (const SearchRow& r : result_.rows) objectives.push_back(r.objective);
    std::nth_element(objectives.begin(), objectives.begin() + (req_.top - 1), objectives.end());
    return objectives[req_.top - 1];
  }

  bool beaten_on_time_and_cost(const Candidate& c) const {
    return std::any_of(result_.rows.begin(), result_.rows.end(), [&](const SearchRow& r) {
      return r.seconds_to_train < c.bound_time && r.cost < c.bound_cost;
    });
  }

  void simulate_in_rounds(const std::vector<Candidate>& candidates) {
    size_t next = 0;
    while (next < candidates.size()) {
      const double kth = kth_objective();
      std::vector<const Candidate*> round;
      for (; next < candidates.size() && static_cast<int>(round.size()) < req_.round_size; ++next) {
        const Candidate& c = candidates[next];
        if (!c.baseline && c.bound_objective > kth && beaten_on_time_and_cost(c))
          ++result_.counts.bounded;
        else
          round.push_back(&c);
      }
      std::vector<const Candidate*> batch;  // one per simulation not done before
      std::set<std::string> batched;
      for (const Candidate* c : round)
        if (!cache_.count(c->simulation_key) && batched.insert(c->simulation_key).second) batch.push_back(c);
      std::vector<const Scenario*> scenarios;
      for (const Candidate* c : batch) scenarios.push_back(&c->scenario);
      const long long remaining = static_cast<long long>(candidates.size() - next);
      long long finished = 0;
      auto report = [&] {
        if (on_progress_)
          on_progress_({result_.counts.simulated + finished, remaining + static_cast<long long>(batch.size()) - finished, pruned()});
      };
      report();  // at once: a round's first simulation can take a while
      const std::vector<StepFigures> figures = simulate_(scenarios, [&] { ++finished, report(); });
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!figures[i].error.empty())
          throw std::runtime_error("simulating " + describe(batch[i]->scenario) + ": " + figures[i].error);
        cache_[batch[i]->simulation_key] = figures[i];
      }
      result_.counts.cache_hits += static_cast<long long>(round.size() - batch.size());
      for (const Candidate* c : round) add_row(*c, cache_.at(c->simulation_key));
      if (on_progress_) on_progress_({result_.counts.simulated, remaining, pruned()});
    }
  }

  long long pruned() const {
    const SearchCounts& n = result_.counts;
    return n.invalid + n.out_of_memory + n.dominated + n.bounded;
  }

  void add_row(const Candidate& c, const StepFigures& figures) {
    SearchRow row;
    row.index = c.index;
    row.scenario = c.scenario;
    row.figures = figures;
    row.peak_memory_bytes = c.peak_memory_bytes;
    row.lower_bound_seconds = c.bound_seconds;
    std::tie(row.seconds_to_train, row.cost) = time_and_cost(c.scenario, figures.step_seconds, result_.budget_tokens, prices_);
    row.objective = req_.objective == Objective::time ? row.seconds_to_train : row.cost;
    row.baseline = c.baseline;
    result_.rows.push_back(std::move(row));
    ++result_.counts.simulated;
  }

  void rank() {
    std::vector<SearchRow>& rows = result_.rows;
    merge_baseline_into_its_grid_twin();
    std::sort(rows.begin(), rows.end(), [](const SearchRow& a, const SearchRow& b) {
      return std::tie(a.objective, a.index) < std::tie(b.objective, b.index);
    });
    std::vector<int> by_time(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) by_time[i] = static_cast<int>(i);
    std::sort(by_time.begin(), by_time.end(), [&](int a, int b) {
      return std::tie(rows[a].seconds_to_train, rows[a].cost, rows[a].index) <
             std::tie(rows[b].seconds_to_train, rows[b].cost, rows[b].index);
    });
    double cheapest = std::numeric_limits<double>::infinity();
    for (int i : by_time)
      if (rows[i].cost < cheapest) cheapest = rows[i].cost, result_.pareto.push_back(i);
  }

  // The scenario's configuration is a row of its own only where no grid
  // point is the same configuration; otherwise that point's row is marked.
  void merge_baseline_into_its_grid_twin() {
    std::vector<SearchRow>& rows = result_.rows;
    auto baseline = std::find_if(rows.begin(), rows.end(), [](const SearchRow& r) { return r.baseline; });
    if (baseline == rows.end()) return;
    const std::vector<std::string> extra = extra_columns(result_);
    const std::vector<std::string> cells = configuration_cells(baseline->scenario, extra);
    auto twin = std::find_if(rows.begin(), rows.end(), [&](const SearchRow& r) {
      return !r.baseline && configuration_cells(r.scenario, extra) == cells;
    });
    if (twin == rows.end()) return;
    twin->baseline = true;
    rows.erase(baseline);
  }

  const SearchRequest& req_;
  const BatchSimulator& simulate_;
  const std::function<void(const SearchProgress&)>& on_progress_;
  std::map<std::string, double> prices_;      // per GPU-hour in result_.cost_unit, by GPU type
  std::map<std::string, StepFigures> cache_;  // by simulation key
  SearchResult result_;
};

}  // namespace

SearchResult run_search(const SearchRequest& request, const BatchSimulator& simulator,
                        const std::function<void(const SearchProgress&)>& on_progress) {
  return Search(request, simulator, on_progress).run();
}

}  // namespace simtrain
