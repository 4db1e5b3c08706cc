#include "trace_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "sim/base/input_error.hpp"
#include "sim/base/median.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

constexpr size_t kExamples = 5;

using TaskKey = std::tuple<int, TaskKind, std::string>;  // rank, kind, name

// Each (rank, kind, name)'s task ids in start order (ties: issue order).
std::map<TaskKey, std::vector<int>> tasks_by_key(const RecordedStep& step) {
  std::map<TaskKey, std::vector<int>> keys;
  for (int rank = 0; rank < step.program.rank_lists(); ++rank)
    for (int id : step.program.rank_tasks(rank)) {
      const Task& t = step.program.tasks[id];
      keys[{t.rank, t.kind, task_name(step.program, t)}].push_back(id);
    }
  for (auto& [key, ids] : keys)
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int a, int b) { return step.timeline.tasks[a].start < step.timeline.tasks[b].start; });
  return keys;
}

double duration(const RecordedStep& step, int id) {
  const TaskTiming& t = step.timeline.tasks[id];
  return t.end - t.start;
}

// (live - simulated) / live; none where only the live duration is 0.
std::optional<double> relative_error(double simulated, double live) {
  if (live != 0) return (live - simulated) / live;
  if (simulated == 0) return 0.0;
  return std::nullopt;
}

struct KindSamples {
  KindComparison result;
  std::vector<double> errors;
};

std::string example(int rank, const std::string& name) { return "rank " + std::to_string(rank) + ": " + name; }

std::string percent(double fraction) { return relative_difference_text(fraction); }
std::string milliseconds(double seconds) { return format("%.3f ms", seconds * 1e3); }

std::string kind_line(const KindComparison& k, const std::string& label) {
  char line[512];
  const std::string worst = k.worst_rank >= 0 ? example(k.worst_rank, k.worst_task) : "-";
  std::snprintf(line, sizeof line, "%-10s %7d %9s %9s  %-32s %14s %14s %9s", label.c_str(), k.matched,
                percent(k.median_error).c_str(), percent(k.worst_error).c_str(), worst.c_str(),
                milliseconds(k.simulated_seconds).c_str(), milliseconds(k.live_seconds).c_str(),
                percent(k.sum_error).c_str());
  std::string text = line;
  if (k.zero_live) text += "  (" + std::to_string(k.zero_live) + " with live duration 0)";
  return text + "\n";
}

nlohmann::json kind_json(const KindComparison& k) {
  nlohmann::json worst = nullptr;
  if (k.worst_rank >= 0) worst = {{"task", k.worst_task}, {"rank", k.worst_rank}, {"error", k.worst_error}};
  return {{"kind", to_string(k.kind)},
          {"matched", k.matched},
          {"zero_live", k.zero_live},
          {"median_error", k.median_error},
          {"worst", worst},
          {"simulated_seconds", k.simulated_seconds},
          {"live_seconds", k.live_seconds},
          {"sum_error", k.sum_error}};
}

std::string name_of(const RecordedStep& step, const std::string& otherwise) {
  return step.source.empty() ? otherwise : step.source;
}

// " --set a=1 --set b=2"
std::string set_arguments(const std::vector<std::string>& overrides) {
  std::string text;
  for (const std::string& o : overrides) text += " --set " + o;
  return text;
}

// "tiny-4gpu --set a=1, TP 2 x PP 2 x DP 1, 8 micro-batches", from what the trace says.
std::string described(const RecordedStep& step) {
  const Program& p = step.program;
  std::string text = step.origin.scenario.empty() ? "" : step.origin.scenario + set_arguments(step.origin.overrides) + ", ";
  const int data = p.world_size / std::max(1, p.tensor_size * p.pipeline_size);
  return text + "TP " + std::to_string(p.tensor_size) + " x PP " + std::to_string(p.pipeline_size) + " x DP " +
         std::to_string(data) + ", " + std::to_string(p.micro_batches) + " micro-batches";
}

// Traces written before simtrain recorded their Program cannot be checked.
void require_hash(const RecordedStep& step, const std::string& name, const std::string& rewrite) {
  if (step.program_hash.empty())
    throw InputError(name, "otherData.program_hash",
                     "missing: the trace was written before simtrain recorded which Program a trace is of, so "
                     "whether both traces are of one Program cannot be checked; " + rewrite);
}

// SIM must be a simulation's trace (or one from before traces said), LIVE a live run's.
void check_sources(const RecordedStep& simulated, const std::string& sim_name, const RecordedStep& live,
                   const std::string& live_name) {
  if (simulated.made_by == "live")
    throw InputError(sim_name, "", "is a live trace (otherData.source = live); compare takes SIM LIVE");
  if (!simulated.made_by.empty() && simulated.made_by != "simulation")
    throw InputError(sim_name, "", "is not a simulated trace (otherData.source = " + simulated.made_by +
                                       "); compare takes SIM LIVE");
  if (live.made_by == "simulation")
    throw InputError(live_name, "", "is a simulated trace (otherData.source = simulation); compare takes SIM LIVE");
  if (live.made_by != "live")
    throw InputError(live_name, "",
                     "is not a live trace (" +
                         (live.made_by.empty() ? std::string("no otherData.source") : "otherData.source = " + live.made_by) +
                         "; `simtrain live --trace` writes \"live\"); compare takes SIM LIVE");
}

}  // namespace

void check_comparable(const RecordedStep& simulated, const RecordedStep& live) {
  const std::string sim_name = name_of(simulated, "the simulated trace"), live_name = name_of(live, "the live trace");
  check_sources(simulated, sim_name, live, live_name);
  require_hash(simulated, sim_name, "simulate again with --trace");
  require_hash(live, live_name, "run it again with `simtrain live --trace`");
  if (simulated.program_hash == live.program_hash) return;
  std::string reason = "program hash " + live.program_hash + " differs from " + sim_name + "'s " +
                       simulated.program_hash + ": traces of different Programs (" + live_name + ": " +
                       described(live) + "; " + sim_name + ": " + described(simulated) + ")";
  if (!live.origin.scenario.empty())
    reason += ". To simulate the Program the live run ran (its --layers and --micro-batches as --set): simtrain simulate " +
              live.origin.scenario + set_arguments(live.origin.overrides) + " --trace " + sim_name;
  throw InputError(live_name, "", reason);
}

TraceComparison compare_traces(const RecordedStep& simulated, const RecordedStep& live) {
  TraceComparison c;
  c.simulated_source = name_of(simulated, "the simulated trace");
  c.live_source = name_of(live, "the live trace");
  if (simulated.program.world_size != live.program.world_size)
    throw InputError(c.live_source, "",
                     "has " + std::to_string(live.program.world_size) + " ranks, but " + c.simulated_source + " has " +
                         std::to_string(simulated.program.world_size) + ": they are not traces of the same job");
  c.world_size = live.program.world_size;

  const std::map<TaskKey, std::vector<int>> sim_keys = tasks_by_key(simulated);
  std::map<TaskKey, std::vector<int>> live_keys = tasks_by_key(live);
  std::map<TaskKind, KindSamples> kinds;
  auto unmatched = [](int& count, std::vector<std::string>& examples, const TaskKey& key, size_t n) {
    count += static_cast<int>(n);
    if (n && examples.size() < kExamples) examples.push_back(example(std::get<0>(key), std::get<2>(key)));
  };
  for (const auto& [key, sim_ids] : sim_keys) {
    auto found = live_keys.find(key);
    const std::vector<int> no_ids;
    const std::vector<int>& live_ids = found == live_keys.end() ? no_ids : found->second;
    const size_t pairs = std::min(sim_ids.size(), live_ids.size());
    unmatched(c.only_simulated, c.only_simulated_examples, key, sim_ids.size() - pairs);
    unmatched(c.only_live, c.only_live_examples, key, live_ids.size() - pairs);
    for (size_t i = 0; i < pairs; ++i) {
      const double sim_seconds = duration(simulated, sim_ids[i]);
      const double live_seconds = duration(live, live_ids[i]);
      KindSamples& samples = kinds[std::get<1>(key)];
      KindComparison& k = samples.result;
      ++k.matched;
      ++c.matched;
      k.simulated_seconds += sim_seconds;
      k.live_seconds += live_seconds;
      const std::optional<double> error = relative_error(sim_seconds, live_seconds);
      if (!error) {
        ++k.zero_live;
        continue;
      }
      samples.errors.push_back(*error);
      if (k.worst_rank < 0 || std::abs(*error) > std::abs(k.worst_error)) {
        k.worst_error = *error;
        k.worst_task = std::get<2>(key);
        k.worst_rank = std::get<0>(key);
      }
    }
    if (found != live_keys.end()) live_keys.erase(found);  // what is left is only in the live trace
  }
  for (const auto& [key, live_ids] : live_keys) unmatched(c.only_live, c.only_live_examples, key, live_ids.size());
  if (c.matched == 0)
    throw InputError(c.live_source, "",
                     "not one task matches a task of " + c.simulated_source +
                         " (tasks are matched by rank, kind and name): are they traces of the same scenario?");

  for (auto& [kind, samples] : kinds) {
    KindComparison& k = samples.result;
    k.kind = kind;
    k.median_error = median(samples.errors);
    k.sum_error = relative_error(k.simulated_seconds, k.live_seconds).value_or(0);
    if (kind == TaskKind::RECV)
      c.recv = k;
    else
      c.kinds.push_back(k);
  }
  c.simulated_step_seconds = simulated.timeline.step_seconds;
  c.live_step_seconds = live.timeline.step_seconds;
  c.step_error = relative_error(c.simulated_step_seconds, c.live_step_seconds).value_or(0);
  return c;
}

std::string to_text(const TraceComparison& c) {
  std::string out = c.simulated_source + " (simulated) against " + c.live_source + " (live), " +
                    std::to_string(c.world_size) + " ranks\n";
  out += "error = (live - simulated) / live: positive where the simulation is faster; beyond a factor of 2, live / "
         "simulated (16,024x: live took 16,024 times as long; 1/3x: a third as long)\n\n";
  char header[512];
  std::snprintf(header, sizeof header, "%-10s %7s %9s %9s  %-32s %14s %14s %9s\n", "kind", "tasks", "median", "worst",
                "worst task", "simulated sum", "live sum", "sum err");
  out += header;
  for (const KindComparison& k : c.kinds) out += kind_line(k, to_string(k.kind));
  if (c.recv) {
    out += "receives (simulated: their send's transfer; live: from the message's arrival with the host backend, "
           "the whole wait with NCCL):\n";
    out += kind_line(*c.recv, to_string(c.recv->kind));
  }
  out += "\n";
  add_line(out, "step time", milliseconds(c.simulated_step_seconds) + " simulated, " + milliseconds(c.live_step_seconds) +
                                 " live, error " + percent(c.step_error));
  add_line(out, "tasks matched", with_commas(c.matched));
  auto list = [&](const std::string& label, int count, const std::vector<std::string>& examples) {
    std::string value = with_commas(count);
    for (size_t i = 0; i < examples.size(); ++i) value += (i ? ", " : " (") + examples[i];
    if (!examples.empty()) value += count > static_cast<int>(examples.size()) ? ", ...)" : ")";
    add_line(out, label, value);
  };
  list("only simulated", c.only_simulated, c.only_simulated_examples);
  list("only live", c.only_live, c.only_live_examples);
  return out;
}

nlohmann::json to_json(const TraceComparison& c) {
  nlohmann::json kinds = nlohmann::json::array();
  for (const KindComparison& k : c.kinds) kinds.push_back(kind_json(k));
  return {{"simulated", c.simulated_source},
          {"live", c.live_source},
          {"world_size", c.world_size},
          {"kinds", kinds},
          {"recv", c.recv ? kind_json(*c.recv) : nlohmann::json(nullptr)},
          {"matched", c.matched},
          {"only_simulated", {{"count", c.only_simulated}, {"examples", c.only_simulated_examples}}},
          {"only_live", {{"count", c.only_live}, {"examples", c.only_live_examples}}},
          {"step",
           {{"simulated_seconds", c.simulated_step_seconds},
            {"live_seconds", c.live_step_seconds},
            {"error", c.step_error}}}};
}

}  // namespace simtrain
