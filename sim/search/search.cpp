#include "sim/search/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>

#include "sim/base/child_process.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"
#include "sim/step/memory_model.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/search/step_bound.hpp"

namespace simtrain {

Objective objective_named(const std::string& name) {
  if (name == "cost") return Objective::cost;
  if (name == "tokens-per-dollar") return Objective::tokens_per_dollar;
  return Objective::time;
}

std::string to_string(Objective objective) {
  switch (objective) {
    case Objective::time: return "time";
    case Objective::cost: return "cost";
    case Objective::tokens_per_dollar: return "tokens-per-dollar";
  }
  return "?";
}

int64_t gpu_count_named(const std::string& text) {
  const nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  const bool whole = value.is_number_integer() ||
                     (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  if (!whole) throw InputError("search", "--gpus", "expected a whole number of GPUs, got '" + text + "'");
  const double gpus = value.get<double>();
  if (gpus < 1) throw InputError("search", "--gpus", "must be at least 1 GPU, got " + text);
  if (gpus > static_cast<double>(limits::max_gpus))
    throw InputError("search", "--gpus", "must be at most " + std::to_string(limits::max_gpus) +
                                             " GPUs (the largest cluster simtrain holds), got " + text);
  return static_cast<int64_t>(gpus);
}

bool sets_dimension(const std::string& set_key, const std::string& dimension_key) {
  return set_key == dimension_key ||
         (dimension_key == "virtual_stages" && set_key == "num_layers_per_virtual_pipeline_stage");
}

std::string grid_text(const SearchCounts& n) {
  std::vector<std::pair<long long, std::string>> most_first;
  for (const auto& [rule, points] : n.invalid_by_rule) most_first.push_back({-points, rule});
  std::sort(most_first.begin(), most_first.end());
  std::string rules;
  for (const auto& [minus_points, rule] : most_first)
    rules += (rules.empty() ? "" : "; ") + std::to_string(-minus_points) + " " + rule;
  return std::to_string(n.enumerated) + " grid points: " + std::to_string(n.duplicates) + " duplicates, " +
         std::to_string(n.invalid) + " invalid" + (rules.empty() ? "" : " (" + rules + ")") + ", " +
         std::to_string(n.out_of_memory) + " out of memory";
}

std::vector<Dimension> default_dimensions(const Scenario& s) {
  std::vector<nlohmann::json> tensor, pipeline;
  for (int t = 1; t <= std::min(8, s.cluster.topology.gpus_per_node); t *= 2) tensor.push_back(t);
  for (int64_t p = 1; p <= s.model.num_layers; p *= 2) pipeline.push_back(p);
  return {{"tensor_model_parallel_size", tensor},
          {"pipeline_model_parallel_size", pipeline},
          {"virtual_stages", {1, 2}},
          {"micro_batch_size", {1, 2, 4}},
          {"schedule", {"1f1b", "zb_h1"}},
          {"zero_stage", {0, 1, 2}},
          {"recompute_granularity", {"none", "selective", "full"}},
          {"sequence_parallel", {false, true}}};
}

nlohmann::json to_json(const StepFigures& f) {
  return {{"step_seconds", f.step_seconds},
          {"tokens_per_second", f.tokens_per_second},
          {"model_tflops_per_gpu", f.model_tflops_per_gpu},
          {"mfu", f.mfu},
          {"bubble_fraction", f.bubble_fraction},
          {"exposed_comm_over_compute", f.exposed_comm_over_compute},
          {"error", f.error}};
}

StepFigures step_figures_from_json(const nlohmann::json& j) {
  StepFigures f;
  f.step_seconds = j.at("step_seconds").get<double>();
  f.tokens_per_second = j.at("tokens_per_second").get<double>();
  f.model_tflops_per_gpu = j.at("model_tflops_per_gpu").get<double>();
  f.mfu = j.at("mfu").get<double>();
  f.bubble_fraction = j.at("bubble_fraction").get<double>();
  f.exposed_comm_over_compute = j.at("exposed_comm_over_compute").get<double>();
  f.error = j.at("error").get<std::string>();
  return f;
}

BatchSimulator local_simulator(int jobs, const std::atomic<bool>* cancel) {
  return [jobs, cancel](const std::vector<const Scenario*>& batch, const std::function<void()>& on_done) {
    ChildOptions options;
    options.cancel = cancel;
    // Each configuration in a child of its own (whose replay forks once more).
    const std::vector<std::string> results = run_in_children(
        batch.size(), jobs,
        [&](size_t i) {
          StepFigures f;
          try {
            const StepReport r = simulate(*batch[i]).report;
            f = {r.step_seconds, r.tokens_per_second, r.model_tflops_per_gpu, r.mfu, r.bubble_fraction,
                 r.most_exposed_over_compute, ""};
          } catch (const std::exception& e) {
            f.error = e.what();
          }
          return to_json(f).dump();
        },
        [&](size_t) {
          if (on_done) on_done();
        },
        options);
    std::vector<StepFigures> figures;
    for (const std::string& text : results) figures.push_back(step_figures_from_json(nlohmann::json::parse(text)));
    return figures;
  };
}

namespace {

// Fields that mean nothing without data parallelism.
const std::vector<std::string> data_parallel_keys = {
    "zero_stage",        "dp_sync",         "dp_compression_ratio", "dp_compression_seconds_per_GB",
    "parameter_servers", "ddp_bucket_size", "overlap_grad_reduce"};

int recompute_level(const Scenario& s) { return static_cast<int>(s.training.recompute); }

// The rule a grid point's InputError names, without that point's figures:
// "f.json: cluster.num_gpus: must be a multiple of tensor x pipeline parallel size (4), got 3"
// -> "cluster.num_gpus must be a multiple of tensor x pipeline parallel size".
std::string rule_broken(std::string message, const std::string& source) {
  if (message.starts_with(source + ": ")) message.erase(0, source.size() + 2);
  message = message.substr(0, std::min(message.find(" ("), message.find(", got ")));
  if (const size_t colon = message.find(": "); colon != std::string::npos) message.replace(colon, 2, " ");
  return message;
}

std::string value_text(const nlohmann::json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

std::string describe(const Scenario& s) {
  const nlohmann::json none = nlohmann::json::object();
  return s.cluster.gpu.name + " x" + std::to_string(s.cluster.num_gpus) + " " + s.document.value("parallelism", none).dump() +
         " " + s.document.value("training", none).dump();
}

enum class Verdict { duplicate, invalid, out_of_memory, fits };

// Something the user asked for (a GPU count, a GPU type, a --vary value) and
// what became of the grid points with it.
struct Choice {
  std::string option;  // "--gpus 3", "--vary micro_batch_size=3"
  SearchCounts counts;
  long long fitting = 0;  // points valid and in memory (a duplicate as the point it repeats)
};

void tally(SearchCounts& n, Verdict verdict, const std::string& rule) {
  ++n.enumerated;
  switch (verdict) {
    case Verdict::duplicate: ++n.duplicates; break;
    case Verdict::invalid: ++n.invalid, ++n.invalid_by_rule[rule]; break;
    case Verdict::out_of_memory: ++n.out_of_memory; break;
    case Verdict::fits: break;
  }
}

// One configuration that survived parsing and the memory check.
struct Candidate {
  int index = 0;
  Scenario scenario;
  double peak_memory_bytes = 0;
  double bound_seconds = 0;
  double bound_time = 0, bound_cost = 0, bound_objective = 0;
  std::string simulation_key;  // identical simulations share it
};

class Search {
public:
  Search(const SearchRequest& request, const BatchSimulator& simulator,
         const std::function<void(const SearchProgress&)>& on_progress)
      : req_(request), simulate_(simulator), on_progress_(on_progress) {
    result_.objective = req_.objective;
    result_.budget_tokens = req_.base.training.train_tokens > 0 ? req_.base.training.train_tokens : 1e9;
    result_.per_billion_tokens = req_.base.training.train_tokens <= 0;
    if (req_.round_size < 1) throw InputError("search", "--round", "must be at least 1");
    if (req_.top < 0) throw InputError("search", "--top", "must be at least 0");
  }

  SearchResult run() {
    make_dimensions();
    check_gpu_types();
    set_prices();
    make_choices();
    std::vector<Candidate> candidates = enumerate();
    refuse_what_never_fits(candidates);
    drop_needless_recompute(candidates);
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.bound_objective < b.bound_objective;
    });
    simulate_in_rounds(candidates);
    rank();
    return std::move(result_);
  }

private:
  void make_dimensions() {
    for (const Dimension& d : default_dimensions(req_.base))
      if (!fixed(d.key)) dimensions_.push_back(d);
    for (const Dimension& d : req_.dimensions) {
      if (d.values.empty()) throw InputError("search", "--vary " + d.key, "no values");
      if (given_.count(d.key)) throw InputError("search", "--vary " + d.key, "given twice; list every value in one --vary");
      if (d.key == "virtual_stages")
        check_virtual_stages(d);
      else
        check_field_known(d);
      given_.insert(d.key);
      auto same = std::find_if(dimensions_.begin(), dimensions_.end(), [&](const Dimension& e) { return e.key == d.key; });
      if (same != dimensions_.end())
        same->values = d.values;
      else
        dimensions_.push_back(d), result_.columns.push_back(d.key);
    }
  }

  // A key no scenario has is refused in parse_scenario's words for `--set KEY`.
  void check_field_known(const Dimension& d) const {
    const std::string as_set = InputError(req_.base.source, "--set " + d.key, "").what();
    try {
      parse_scenario(req_.base.document, req_.base.source, req_.base_dir, {d.key + "=" + d.values.front().dump()});
    } catch (const InputError& e) {
      const std::string message = e.what();
      if (message.starts_with(as_set + "unknown field"))
        throw InputError("search", "--vary " + d.key, message.substr(as_set.size()));
    }
  }

  // Model chunks per pipeline rank: no scenario field checks them.
  static void check_virtual_stages(const Dimension& d) {
    for (const nlohmann::json& v : d.values)
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > limits::max_layers)
        throw InputError("search", "--vary virtual_stages=" + value_text(v),
                         "expected a whole number of model chunks per pipeline rank, from 1 to " + std::to_string(limits::max_layers));
  }

  // Each GPU type is the scenario's or a built-in one.
  void check_gpu_types() const {
    for (const std::string& gpu : req_.gpu_types)
      if (gpu != req_.base.cluster.gpu.name) gpu_from_json(gpu, "search", "--gpu-types");
  }

  // What the user asked for, in the order of the options.
  void make_choices() {
    auto add = [&](const std::string& option) {
      choices_.push_back({option, {}, 0});
      return choices_.size() - 1;
    };
    for (int64_t gpus : req_.gpu_counts) gpu_count_choices_.push_back(add("--gpus " + std::to_string(gpus)));
    for (const std::string& gpu : req_.gpu_types) gpu_type_choices_.push_back(add("--gpu-types " + gpu));
    for (const Dimension& d : dimensions_) {
      std::vector<size_t>& value_choices = value_choices_.emplace_back();
      // One value of several: a single one is as --set, which the grid's own reasons explain.
      if (given_.count(d.key) && d.values.size() > 1)
        for (const nlohmann::json& value : d.values) value_choices.push_back(add("--vary " + d.key + "=" + value_text(value)));
    }
  }

  std::vector<size_t> choices_of(size_t gpu_type, size_t gpu_count, const std::vector<size_t>& at) const {
    std::vector<size_t> of;
    if (!gpu_type_choices_.empty()) of.push_back(gpu_type_choices_[gpu_type]);
    if (!gpu_count_choices_.empty()) of.push_back(gpu_count_choices_[gpu_count]);
    for (size_t i = 0; i < at.size(); ++i)
      if (!value_choices_[i].empty()) of.push_back(value_choices_[i][at[i]]);
    return of;
  }

  void refuse_what_never_fits(const std::vector<Candidate>& candidates) const {
    const std::string none = "no configuration of the grid is valid and fits in memory: ";
    for (const Choice& c : choices_)
      if (c.fitting == 0) throw InputError("search", c.option, none + grid_text(c.counts));
    if (candidates.empty()) throw InputError("search", "", none + grid_text(result_.counts));
  }

  void set_prices() {
    gpu_types_ = req_.gpu_types.empty() ? std::vector<std::string>{req_.base.cluster.gpu.name} : req_.gpu_types;
    gpu_counts_ = req_.gpu_counts.empty() ? std::vector<int64_t>{req_.base.cluster.num_gpus} : req_.gpu_counts;
    bool all_priced = true;
    for (const std::string& gpu : gpu_types_) {
      auto given = req_.prices.find(gpu);
      if (given != req_.prices.end())
        prices_[gpu] = given->second;
      else if (gpu == req_.base.cluster.gpu.name && req_.base.cluster.price_per_gpu_hour > 0)
        prices_[gpu] = req_.base.cluster.price_per_gpu_hour;
      else
        all_priced = false;
    }
    for (const auto& [gpu, usd] : req_.prices)
      if (std::find(gpu_types_.begin(), gpu_types_.end(), gpu) == gpu_types_.end())
        throw InputError("search", "--price " + gpu, "is not a GPU type of the search (--gpu-types)");
    result_.cost_unit = all_priced ? "USD" : "GPU-hours";
    if (!all_priced)
      for (const std::string& gpu : gpu_types_) prices_[gpu] = 1;
  }

  bool fixed(const std::string& key) const {
    return std::any_of(req_.fixed_keys.begin(), req_.fixed_keys.end(),
                       [&](const std::string& f) { return sets_dimension(f, key); });
  }

  // The base document without the fields the search sets.
  nlohmann::json base_document() const {
    nlohmann::json doc = req_.base.document;
    std::vector<std::string> cleared = {"data_parallel_size"};
    for (const Dimension& d : dimensions_) {
      cleared.push_back(d.key);
      if (d.key == "virtual_stages") {
        cleared.push_back("num_layers_per_virtual_pipeline_stage");
        if (!fixed("schedule")) cleared.push_back("schedule");
      }
    }
    for (const char* section : {"model", "training", "parallelism", "cluster"})
      if (doc.contains(section) && doc[section].is_object())
        for (const std::string& key : cleared) doc[section].erase(key);
    return doc;
  }

  // The fields a grid point sets, without those that do not apply to it
  // (the same configuration then has the same fields).
  nlohmann::json normalised(nlohmann::json a, int64_t gpus) const {
    const Scenario& b = req_.base;
    auto value = [&](const std::string& key, const nlohmann::json& otherwise) {
      return a.contains(key) ? a[key] : otherwise;
    };
    auto integer = [&](const std::string& key, int64_t otherwise) {  // 0 for a value parse_scenario will refuse (or make_dimensions has)
      const nlohmann::json v = value(key, otherwise);
      return v.is_number_integer() ? v.get<int64_t>() : 0;
    };
    const int64_t tp = integer("tensor_model_parallel_size", b.parallel.tensor);
    const int64_t pp = integer("pipeline_model_parallel_size", b.parallel.pipeline);
    if (a.contains("virtual_stages")) {
      const int64_t v = integer("virtual_stages", 1);
      a.erase("virtual_stages");
      if (v > 1) {
        if (!fixed("schedule")) a["schedule"] = "interleaved_1f1b";
        a["num_layers_per_virtual_pipeline_stage"] = pp > 1 && b.model.num_layers % (pp * v) == 0 ? b.model.num_layers / (pp * v) : 0;
      }
    }
    if (tp == 1) a.erase("sequence_parallel");
    if (pp == 1) a.erase("schedule");  // one stage: forward, backward, whatever the schedule
    if (tp * pp == 0 || gpus / (tp * pp) <= 1)
      for (const std::string& key : data_parallel_keys) a.erase(key);
    if (value("dp_sync", to_string(b.parallel.dp_sync)) != "parameter_server") a.erase("parameter_servers");
    if (value("dp_compression_ratio", b.parallel.dp_compression_ratio) == 1) a.erase("dp_compression_seconds_per_GB");
    return a;
  }

  const CostModel& cost_model(const Scenario& s) {
    auto& model = cost_models_[s.cluster.gpu.name + "\n" + s.cluster.kernel_profile];
    if (!model) model = make_cost_model(s);
    return *model;
  }

  std::vector<Candidate> enumerate() {
    const nlohmann::json base = base_document();
    std::map<std::string, bool> fits;  // by configuration
    std::vector<Candidate> candidates;
    int index = 0;
    for (size_t t = 0; t < gpu_types_.size(); ++t)
      for (size_t c = 0; c < gpu_counts_.size(); ++c) {
        const std::string& gpu = gpu_types_[t];
        const int64_t gpus = gpu_counts_[c];
        std::vector<size_t> at(dimensions_.size(), 0);
        do {
          nlohmann::json point = nlohmann::json::object();
          for (size_t i = 0; i < dimensions_.size(); ++i) point[dimensions_[i].key] = dimensions_[i].values[at[i]];
          const nlohmann::json fields = normalised(point, gpus);
          auto [it, first] = fits.try_emplace(gpu + "\n" + std::to_string(gpus) + "\n" + fields.dump(), false);
          std::string rule;
          const Verdict verdict = first ? consider(base, gpu, gpus, fields, index++, candidates, rule) : Verdict::duplicate;
          if (first) it->second = verdict == Verdict::fits;
          tally(result_.counts, verdict, rule);
          for (size_t choice : choices_of(t, c, at)) {
            tally(choices_[choice].counts, verdict, rule);
            choices_[choice].fitting += it->second;
          }
        } while (advance(at));
      }
    return candidates;
  }

  // The next grid point, the last dimension fastest; false after the last.
  bool advance(std::vector<size_t>& at) const {
    for (size_t i = at.size(); i-- > 0;) {
      if (++at[i] < dimensions_[i].values.size()) return true;
      at[i] = 0;
    }
    return false;
  }

  // Adds the grid point to `candidates` if it is valid and fits; else says why not (`rule`: the broken one).
  Verdict consider(const nlohmann::json& base, const std::string& gpu, int64_t gpus, const nlohmann::json& fields,
                   int index, std::vector<Candidate>& candidates, std::string& rule) {
    if (fields.value("num_layers_per_virtual_pipeline_stage", int64_t{1}) == 0) {  // normalised's mark
      rule = "virtual_stages above 1 needs 2 or more pipeline stages of a multiple of virtual_stages layers";
      return Verdict::invalid;
    }
    std::vector<std::string> overrides = {"cluster.num_gpus=" + std::to_string(gpus)};
    if (gpu != req_.base.cluster.gpu.name) overrides.push_back("cluster.gpu=" + nlohmann::json(gpu).dump());
    for (const auto& [key, value] : fields.items()) overrides.push_back(key + "=" + value.dump());
    Candidate c;
    c.index = index;
    try {
      c.scenario = parse_scenario(base, req_.base.source, req_.base_dir, overrides);
    } catch (const InputError& e) {
      rule = rule_broken(e.what(), req_.base.source);
      return Verdict::invalid;
    }
    const Scenario& s = c.scenario;
    const Workload w = build_workload(s);
    for (const MemoryBreakdown& m : memory_per_pipeline_rank(s, w))
      c.peak_memory_bytes = std::max(c.peak_memory_bytes, m.total_bytes());
    if (c.peak_memory_bytes > s.cluster.gpu.memory_bytes) return Verdict::out_of_memory;
    c.bound_seconds = step_lower_bound_seconds(s, w, cost_model(s));
    std::tie(c.bound_time, c.bound_cost) = time_and_cost(s, c.bound_seconds);
    c.bound_objective = req_.objective == Objective::time ? c.bound_time : c.bound_cost;
    nlohmann::json timing = s.document;
    if (s.parallel.zero_stage == 2) timing["parallelism"]["zero_stage"] = 1;  // ZeRO-2 runs ZeRO-1's Program
    c.simulation_key = timing.dump();
    candidates.push_back(std::move(c));
    return Verdict::fits;
  }

  // Seconds and cost of the token budget at this step time.
  std::pair<double, double> time_and_cost(const Scenario& s, double step_seconds) const {
    const double tokens_per_step = static_cast<double>(s.training.global_batch_size) * s.training.seq_length;
    const double seconds = result_.budget_tokens / tokens_per_step * step_seconds;
    const double cost = seconds / 3600 * static_cast<double>(s.cluster.num_gpus) * prices_.at(s.cluster.gpu.name);
    if (!std::isfinite(seconds) || !std::isfinite(cost))
      throw InputError("search", "", "the time or cost to train on " + std::to_string(s.cluster.num_gpus) + " x " +
                                         s.cluster.gpu.name + " is beyond a double's range (lower training.train_tokens or --price)");
    return {seconds, cost};
  }

  // Of configurations that differ only in recompute, the least that fits.
  void drop_needless_recompute(std::vector<Candidate>& candidates) {
    std::map<std::string, int> least;
    auto key = [](const Candidate& c) {
      nlohmann::json doc = c.scenario.document;
      doc["training"].erase("recompute_granularity");
      return doc.dump();
    };
    for (const Candidate& c : candidates) {
      auto [it, inserted] = least.try_emplace(key(c), recompute_level(c.scenario));
      if (!inserted) it->second = std::min(it->second, recompute_level(c.scenario));
    }
    const size_t before = candidates.size();
    std::erase_if(candidates, [&](const Candidate& c) { return recompute_level(c.scenario) > least.at(key(c)); });
    result_.counts.dominated = static_cast<long long>(before - candidates.size());
  }

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
        if (c.bound_objective > kth && beaten_on_time_and_cost(c))
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
    std::tie(row.seconds_to_train, row.cost) = time_and_cost(c.scenario, figures.step_seconds);
    row.objective = req_.objective == Objective::time ? row.seconds_to_train : row.cost;
    result_.rows.push_back(std::move(row));
    ++result_.counts.simulated;
  }

  void rank() {
    std::vector<SearchRow>& rows = result_.rows;
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

  const SearchRequest& req_;
  const BatchSimulator& simulate_;
  const std::function<void(const SearchProgress&)>& on_progress_;
  std::vector<Dimension> dimensions_;
  std::set<std::string> given_;  // keys of --vary
  std::vector<Choice> choices_;
  std::vector<size_t> gpu_count_choices_, gpu_type_choices_;  // by index in gpu_counts_, gpu_types_ (empty: not asked for)
  std::vector<std::vector<size_t>> value_choices_;             // by dimension and value (empty: not asked for)
  std::vector<std::string> gpu_types_;
  std::vector<int64_t> gpu_counts_;
  std::map<std::string, double> prices_;
  std::map<std::string, std::unique_ptr<CostModel>> cost_models_;
  std::map<std::string, StepFigures> cache_;  // by simulation key
  SearchResult result_;
};

}  // namespace

SearchResult run_search(const SearchRequest& request, const BatchSimulator& simulator,
                        const std::function<void(const SearchProgress&)>& on_progress) {
  return Search(request, simulator, on_progress).run();
}

}  // namespace simtrain
