#include "sim/search/search_grid.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/text_format.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/scenario/fabric_match.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/search/step_bound.hpp"
#include "sim/step/memory_model.hpp"

namespace simtrain {

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// Fields that mean nothing without data parallelism.
const std::vector<std::string> data_parallel_keys = {
    "zero_stage",        "dp_sync",         "dp_compression_ratio", "dp_compression_seconds_per_GB",
    "parameter_servers", "ddp_bucket_size", "overlap_grad_reduce", "grad_reduce_in_bf16", "overlap_param_gather",
    "expert_model_parallel_size"};

int recompute_level(const Scenario& s) { return static_cast<int>(s.training.recompute); }

// The rule a grid point's InputError names, without that point's figures:
// "f.json: cluster.num_gpus: must be a multiple of tensor x pipeline parallel size (4), got 3"
// -> "cluster.num_gpus must be a multiple of tensor x pipeline parallel size";
// the file is named where it is not the scenario's (a topology's, a model's).
std::string rule_broken(const InputError& error, const std::string& source) {
  const std::string& reason = error.reason();
  const std::string rule = reason.substr(0, std::min(reason.find(" ("), reason.find(", got ")));
  const std::string where = error.file() == source ? error.field() : error.file() + ": " + error.field();
  return where.empty() ? rule : where + " " + rule;
}

std::string value_text(const nlohmann::json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

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

class GridBuilder {
public:
  GridBuilder(const SearchRequest& request, double budget_tokens) : req_(request), budget_tokens_(budget_tokens) {}

  SearchGrid build() {
    make_dimensions();
    check_gpu_types();
    set_prices();
    match_fabrics();
    make_choices();
    grid_.candidates = enumerate();
    refuse_what_never_fits(grid_.candidates);
    drop_needless_recompute(grid_.candidates);
    add_baseline(grid_.candidates);
    return std::move(grid_);
  }

private:
  void make_dimensions() {
    for (const Dimension& d : default_dimensions(req_.base))
      if (!fixed(d.key)) dimensions_.push_back(d);
    for (const Dimension& d : req_.dimensions) {
      if (d.values.empty()) throw InputError("search", "--vary " + d.key, "no values");
      if (given_.count(d.key)) throw InputError("search", "--vary " + d.key, "given twice; list every value in one --vary");
      given_.insert(d.key);
      if (d.key == "gpu") {  // GPU types, as --gpu-types: each priced and checked as one
        vary_gpu_types(d);
        continue;
      }
      if (d.key == "virtual_stages")
        check_virtual_stages(d);
      else if (d.key.starts_with("cluster.topology."))
        check_topology_values(d);
      else
        check_field_known(d);
      auto same = std::find_if(dimensions_.begin(), dimensions_.end(), [&](const Dimension& e) { return e.key == d.key; });
      if (same != dimensions_.end())
        same->values = d.values;
      else
        dimensions_.push_back(d), grid_.columns.push_back(d.key);
    }
  }

  // A key no scenario has is refused in parse_scenario's words for `--set KEY`.
  void check_field_known(const Dimension& d) const {
    try {
      parse_scenario(req_.base.document, req_.base.source, req_.base_dir, {d.key + "=" + d.values.front().dump()});
    } catch (const InputError& e) {
      if (e.file() == req_.base.source && e.field() == "--set " + d.key && e.reason().starts_with("unknown field"))
        throw InputError("search", "--vary " + d.key, e.reason());
    }
  }

  void vary_gpu_types(const Dimension& d) {
    if (!req_.gpu_types.empty()) throw InputError("search", "--vary cluster.gpu", "conflicts with --gpu-types; list the GPU types once");
    gpu_type_option_ = "--vary cluster.gpu=";
    for (const nlohmann::json& v : d.values) {
      if (!v.is_string()) throw InputError("search", "--vary " + d.key + "=" + v.dump(), "expected a GPU name");
      gpu_types_.push_back(v.get<std::string>());
    }
  }

  // Each value of a topology field, alone on the scenario: a field the
  // topology lacks, or a value it refuses, is named before any grid point
  // (only the grid can tell whether a value fits a strategy).
  void check_topology_values(const Dimension& d) const {
    for (const nlohmann::json& v : d.values) {
      try {
        parse_scenario(req_.base.document, req_.base.source, req_.base_dir, {d.key + "=" + v.dump()});
      } catch (const InputError& e) {
        if (e.file() != req_.base.source) continue;
        std::string reason;
        if (e.field() == d.key || e.field() == "--set " + d.key)
          reason = e.reason();
        else if (e.field().starts_with("cluster.topology."))  // another field of the topology the value breaks
          reason = e.field() + ": " + e.reason();
        else
          continue;
        const bool any_value = reason.starts_with("unknown field") || reason.starts_with("applies to kind") ||
                               reason.find("is not an object") != std::string::npos;
        throw InputError("search", "--vary " + d.key + (any_value ? "" : "=" + value_text(v)), reason);
      }
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
  void check_gpu_types() {
    if (gpu_types_.empty()) gpu_types_ = req_.gpu_types;
    for (const std::string& gpu : gpu_types_)
      if (gpu != req_.base.cluster.gpu.name)
        gpu_from_json(gpu, "search", gpu_type_option_ == "--gpu-types " ? "--gpu-types" : gpu_type_option_ + gpu);
  }

  // What the user asked for, in the order of the options.
  void make_choices() {
    auto add = [&](const std::string& option) {
      choices_.push_back({option, {}, 0});
      return choices_.size() - 1;
    };
    for (int64_t gpus : req_.gpu_counts) gpu_count_choices_.push_back(add("--gpus " + std::to_string(gpus)));
    for (const std::string& gpu : asked_gpu_types_) gpu_type_choices_.push_back(add(gpu_type_option_ + gpu));
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
    if (candidates.empty()) throw InputError("search", "", none + grid_text(grid_.counts));
  }

  void set_prices() {
    asked_gpu_types_ = gpu_types_;
    if (gpu_types_.empty()) gpu_types_ = {req_.base.cluster.gpu.name};
    gpu_counts_ = req_.gpu_counts.empty() ? std::vector<int64_t>{req_.base.cluster.num_gpus} : req_.gpu_counts;
    bool all_priced = true;
    for (const std::string& gpu : gpu_types_) {
      auto given = req_.prices.find(gpu);
      if (given != req_.prices.end())
        grid_.prices[gpu] = given->second;
      else if (gpu == req_.base.cluster.gpu.name && req_.base.cluster.price_per_gpu_hour > 0)
        grid_.prices[gpu] = req_.base.cluster.price_per_gpu_hour;
      else if (const GpuSpec* spec = builtin_gpu(gpu); spec && spec->rental_usd_per_gpu_hour > 0)
        grid_.prices[gpu] = spec->rental_usd_per_gpu_hour;  // its rental price (gpu_spec.cpp)
      else
        all_priced = false;
    }
    for (const auto& [gpu, usd] : req_.prices)
      if (std::find(gpu_types_.begin(), gpu_types_.end(), gpu) == gpu_types_.end())
        throw InputError("search", "--price " + gpu, "is not a GPU type of the search (--gpu-types or --vary cluster.gpu)");
    grid_.cost_unit = all_priced ? "USD" : "GPU-hours";
    if (!all_priced)
      for (const std::string& gpu : gpu_types_) grid_.prices[gpu] = 1;
  }

  // Each GPU type on the scenario's topology (or on each of --vary topology),
  // or on the built-in system built for it (--fabric-follows-gpu); a mismatch
  // left in place is said.
  void match_fabrics() {
    std::vector<Topology> topologies = {req_.base.cluster.topology};
    auto varied = std::find_if(dimensions_.begin(), dimensions_.end(), [](const Dimension& d) { return d.key == "topology"; });
    if (varied != dimensions_.end()) {
      if (req_.fabric_follows_gpu)
        throw InputError("search", "--fabric-follows-gpu", "conflicts with --vary topology (which names the topologies)");
      topologies.clear();
      for (const nlohmann::json& value : varied->values)
        topologies.push_back(topology_from_json(value, "search", "--vary topology", req_.base_dir));
    }
    for (const Topology& topology : topologies)
      for (const std::string& gpu : gpu_types_) {
        const std::string mismatch = fabric_mismatch(gpu, topology);
        if (mismatch.empty()) continue;
        const std::optional<std::string> match = req_.fabric_follows_gpu ? builtin_topology_for(gpu, topology) : std::nullopt;
        if (!match) {
          grid_.warnings.push_back(mismatch);
          continue;
        }
        followed_topology_[gpu] = *match;
        grid_.warnings.push_back("GPU " + gpu + " on topology " + *match + ", built for it (--fabric-follows-gpu), not on " +
                                 topology.name);
      }
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
        cleared.insert(cleared.end(), {"num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
                                       "pipeline_model_parallel_layout"});
        if (!fixed("schedule")) cleared.push_back("schedule");
      }
      // The grid's selective recompute is Megatron's default (core_attn), its
      // full recompute every layer's, unless the grid varies the method or its layers too.
      if (d.key == "recompute_granularity") {
        cleared.push_back("recompute_modules");
        if (!given_.count("recompute_method") && !given_.count("recompute_num_layers"))
          cleared.insert(cleared.end(), {"recompute_method", "recompute_num_layers"});
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
    // Transformer Engine's TP overlap rides on sequence parallelism (Megatron
    // refuses it alone): a point without SP runs without the scenario's
    // overlap. SP is the point's, else the base document's (unset, false,
    // where the search varies it).
    const bool searches_sp = std::any_of(dimensions_.begin(), dimensions_.end(),
                                         [](const Dimension& d) { return d.key == "sequence_parallel"; });
    const bool sequence_parallel = a.contains("sequence_parallel") ? a["sequence_parallel"] == true
                                                                   : !searches_sp && b.parallel.sequence_parallel;
    if (b.parallel.tp_comm_overlap && !sequence_parallel && !a.contains("tp_comm_overlap")) a["tp_comm_overlap"] = false;
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
          tally(grid_.counts, verdict, rule);
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
    if (auto followed = followed_topology_.find(gpu); followed != followed_topology_.end())
      overrides.push_back("cluster.topology=" + nlohmann::json(followed->second).dump());
    // A topology's fields after the topology itself (--vary topology with --vary cluster.topology.nic_Gbps).
    for (const bool dotted : {false, true})
      for (const auto& [key, value] : fields.items())
        if ((key.find('.') != std::string::npos) == dotted) overrides.push_back(key + "=" + value.dump());
    Candidate c;
    c.index = index;
    try {
      c.scenario = parse_scenario(base, req_.base.source, req_.base_dir, overrides);
    } catch (const InputError& e) {
      rule = rule_broken(e, req_.base.source);
      return Verdict::invalid;
    }
    if (!assess(c)) return Verdict::out_of_memory;
    candidates.push_back(std::move(c));
    return Verdict::fits;
  }

  // The candidate's peak memory, bounds and simulation key; false if it does not fit in memory.
  bool assess(Candidate& c) {
    const Scenario& s = c.scenario;
    const Workload w = build_workload(s);
    for (const MemoryBreakdown& m : memory_per_pipeline_rank(s, w))
      c.peak_memory_bytes = std::max(c.peak_memory_bytes, m.total_bytes());
    if (c.peak_memory_bytes > s.cluster.gpu.memory_bytes) return false;
    c.bound_seconds = step_lower_bound_seconds(s, w, cost_model(s));
    std::tie(c.bound_time, c.bound_cost) = time_and_cost(s, c.bound_seconds, budget_tokens_, grid_.prices);
    c.bound_objective = req_.objective == Objective::time ? c.bound_time : c.bound_cost;
    nlohmann::json timing = s.document;
    if (s.parallel.zero_stage == 2) timing["parallelism"]["zero_stage"] = 1;  // ZeRO-2 runs ZeRO-1's Program
    c.simulation_key = timing.dump();
    return true;
  }

  // The scenario's own configuration, to compare the others with (after the
  // grid's counts: it is not a grid point).
  void add_baseline(std::vector<Candidate>& candidates) {
    const Scenario& base = req_.base;
    if (std::find(gpu_types_.begin(), gpu_types_.end(), base.cluster.gpu.name) == gpu_types_.end()) {
      grid_.baseline_absent = "its GPU type, " + base.cluster.gpu.name + ", is not searched";
      return;
    }
    Candidate c;
    c.index = static_cast<int>(grid_.counts.enumerated);
    c.scenario = base;
    c.baseline = true;
    // Varied topology fields: its topology as an object too, so that its row shows their values.
    if (std::any_of(dimensions_.begin(), dimensions_.end(), [](const Dimension& d) { return d.key.starts_with("cluster.topology."); }))
      c.scenario = parse_scenario(base.document, base.source, req_.base_dir,
                                  {"cluster.topology.name=" + nlohmann::json(base.cluster.topology.name).dump()});
    if (!assess(c)) {
      grid_.baseline_absent = "it does not fit in memory (" + format("%.1f GiB of ", c.peak_memory_bytes / GiB) +
                              format("%.1f GiB)", base.cluster.gpu.memory_bytes / GiB);
      return;
    }
    candidates.push_back(std::move(c));
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
    grid_.counts.dominated = static_cast<long long>(before - candidates.size());
  }

  const SearchRequest& req_;
  const double budget_tokens_;
  std::vector<Dimension> dimensions_;
  std::set<std::string> given_;  // keys of --vary
  std::vector<Choice> choices_;
  std::vector<size_t> gpu_count_choices_, gpu_type_choices_;  // by index in gpu_counts_, gpu_types_ (empty: not asked for)
  std::vector<std::vector<size_t>> value_choices_;             // by dimension and value (empty: not asked for)
  std::vector<std::string> gpu_types_;        // searched: asked for, else the scenario's
  std::vector<std::string> asked_gpu_types_;  // by --gpu-types or --vary cluster.gpu
  std::string gpu_type_option_ = "--gpu-types ";  // how the user asked for them
  std::vector<int64_t> gpu_counts_;
  std::map<std::string, std::string> followed_topology_;  // GPU type -> the built-in topology it runs on instead
  std::map<std::string, std::unique_ptr<CostModel>> cost_models_;
  SearchGrid grid_;
};

}  // namespace

std::pair<double, double> time_and_cost(const Scenario& s, double step_seconds, double budget_tokens,
                                        const std::map<std::string, double>& prices) {
  const double tokens_per_step = static_cast<double>(s.training.global_batch_size) * s.training.seq_length;
  const double seconds = budget_tokens / tokens_per_step * step_seconds;
  const double cost = seconds / 3600 * static_cast<double>(s.cluster.num_gpus) * prices.at(s.cluster.gpu.name);
  if (!std::isfinite(seconds) || !std::isfinite(cost))
    throw InputError("search", "", "the time or cost to train on " + std::to_string(s.cluster.num_gpus) + " x " +
                                       s.cluster.gpu.name + " is beyond a double's range (lower training.train_tokens or --price)");
  return {seconds, cost};
}

SearchGrid enumerate_grid(const SearchRequest& request, double budget_tokens) {
  return GridBuilder(request, budget_tokens).build();
}

}  // namespace simtrain
