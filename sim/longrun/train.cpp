#include "sim/longrun/train.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "sim/longrun/checkpoint_interval.hpp"
#include "sim/base/child_process.hpp"
#include "sim/engine/storage_transfer.hpp"
#include "sim/base/input_error.hpp"
#include "sim/step/memory_model.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

// The runs come back from their child process as CBOR (exact doubles).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunEvent, kind, start_seconds, end_seconds, detail)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunResult, wall_seconds, useful_seconds, steps, checkpoint_seconds, lost_seconds,
                                   restart_seconds, degraded_seconds, checkpoints, restarts, failures, cost, events)

namespace {

constexpr double hour = 3600, day = 86400;
// checkpoint_every_steps for one checkpoint after the last step, until the steps are known.
constexpr int64_t at_the_end = std::numeric_limits<int64_t>::max();

// What sets the run's length, in the user's words, to name it in an error.
struct Budget {
  std::string source, field;  // "train" and the flag, or the scenario and its field
  std::string amount;         // "1e+30 tokens (1.22e+26 steps)"
  double steps = 0;           // 0: all that fit in --days
};

Budget budget_of(const Scenario& s, const TrainRequest& request) {
  const double tokens_per_step = static_cast<double>(s.training.global_batch_size) * s.training.seq_length;
  auto of_tokens = [&](const std::string& source, const std::string& field, double tokens) {
    const double steps = std::ceil(tokens / tokens_per_step);
    return Budget{source, field, format("%g tokens", tokens) + format(" (%.3g steps)", steps), steps};
  };
  if (request.steps > 0)
    return {"train", "--steps", std::to_string(request.steps) + " steps", static_cast<double>(request.steps)};
  if (request.tokens > 0) return of_tokens("train", "--tokens", request.tokens);
  if (s.training.train_tokens > 0) return of_tokens(s.source, "training.train_tokens", s.training.train_tokens);
  if (request.days > 0) return {"train", "--days", "", 0};  // described once the step time is known
  throw InputError(s.source, "training.train_tokens", "give the run's length: --tokens, --steps or --days, or this field");
}

// Throws InputError unless `runs` runs of `events_per_run` simulated steps
// and failures each stay within max_simulated_events.
void check_simulable(const Budget& budget, int runs, double events_per_run) {
  const double events = events_per_run * runs;
  if (events <= max_simulated_events) return;  // false for NaN too
  std::string reason = budget.amount;
  if (events_per_run > budget.steps)
    reason += format(", or about %.3g simulated steps and failures with the work failures throw away", events_per_run);
  if (runs > 1) reason += format("; %.3g for ", events) + std::to_string(runs) + " runs";
  reason += format("; at most %.0e steps and failures can be simulated, all runs together", max_simulated_events);
  const bool too_many_runs = events_per_run <= max_simulated_events;
  throw InputError(too_many_runs ? "train" : budget.source, too_many_runs ? "--runs" : budget.field, reason);
}

// Physical links of the fabric, by what their failure does. Fabric links come
// in up/down pairs standing for one duplex cable or bundle.
struct LinkCounts {
  double stopping = 0, redundant = 0, leaf_switches = 0;
  int representative_redundant = -1;
};

LinkCounts count_links(const Fabric& fabric) {
  LinkCounts c;
  for (size_t i = 0; i < fabric.links().size(); ++i) {
    const int link = static_cast<int>(i);
    const double cables = fabric.physical_links(link) / 2.0;
    if (fabric.has_redundancy(link)) {
      c.redundant += cables;
      if (c.representative_redundant < 0) c.representative_redundant = link;
    } else {
      c.stopping += cables;
    }
    const std::string& name = fabric.links()[i].name;
    if (name.rfind("leaf", 0) == 0 && name.size() > 3 && name.compare(name.size() - 3, 3, "_up") == 0) c.leaf_switches += 1;
  }
  return c;
}

double rate(double count, double mtbf_hours) { return mtbf_hours > 0 ? count / (mtbf_hours * hour) : 0; }

// A redundant link at (k-1)/k of its bandwidth: one of its k physical links is down.
FailureEvent losing_one_of(const Fabric& fabric, int link) {
  const double k = fabric.physical_links(link);
  return {0.0, -1, fabric.links()[link].name, (k - 1) / k};
}

// Whole steps in `seconds` of training, at least one.
int64_t steps_in(double seconds, double step_seconds) {
  return std::max<int64_t>(1, std::llround(std::min(seconds / step_seconds, 1e18)));
}

// How often to checkpoint: as configured, else Daly's optimum; without random
// failures that stop the job, once at the end if a scheduled one does, else never.
void choose_checkpoint_interval(TrainPlan& plan, const CheckpointConfig& ckpt, bool scheduled_stops) {
  RunModel& m = plan.model;
  if (ckpt.every_steps > 0) {
    m.checkpoint_every_steps = ckpt.every_steps;
    plan.interval_rule = "every " + std::to_string(ckpt.every_steps) + " steps (checkpoint.every_steps)";
  } else if (ckpt.every_minutes > 0) {
    m.checkpoint_every_steps = steps_in(ckpt.every_minutes * 60, m.step_seconds);
    plan.interval_rule = format("every %g minutes (checkpoint.every_minutes)", ckpt.every_minutes);
  } else if (plan.stop_mtbf_seconds > 0) {
    const double interval = daly_interval_seconds(m.checkpoint_write_seconds, plan.stop_mtbf_seconds);
    m.checkpoint_every_steps = steps_in(interval, m.step_seconds);
    char rule[160];
    std::snprintf(rule, sizeof rule, "Daly's optimum: %.1f min of training between checkpoints (write %.1f s, MTBF %.2f h)",
                  interval / 60, m.checkpoint_write_seconds, plan.stop_mtbf_seconds / hour);
    plan.interval_rule = rule;
  } else if (scheduled_stops) {
    m.checkpoint_every_steps = at_the_end;
    plan.interval_rule = "only scheduled failures: one checkpoint at the end";
  } else {
    m.checkpoint_every_steps = 0;
    plan.interval_rule = "no failure can stop the job";
  }
}

// The steps to train: the budget's, or with --days at most all that fit;
// refused beyond what can be simulated.
void choose_steps(TrainPlan& plan, Budget budget, const TrainRequest& request, int runs) {
  RunModel& m = plan.model;
  plan.steps_rule = "from " + budget.field;
  if (request.days > 0) {
    m.wall_limit_seconds = request.days * day;
    const double fit = steps_within(m, m.wall_limit_seconds);
    const std::string days = format(request.days == 1 ? "%g day" : "%g days", request.days);
    if (fit < 1)
      throw InputError("train", "--days",
                       days + format(" do not hold one step of %.3g s", m.step_seconds) +
                           (m.checkpoint_every_steps > 0 ? format(" and its checkpoint write of %.3g s", m.checkpoint_write_seconds) : ""));
    if (budget.steps == 0 || fit < budget.steps) {
      budget = {"train", "--days", days + format(" (%.3g steps", fit) + format(" of %.3g s)", m.step_seconds), fit};
      plan.steps_rule = "at most: all that fit in " + days + " without failures";
      plan.steps_fill_days = true;
    } else {
      plan.steps_rule += ", within " + days;
    }
  }
  check_simulable(budget, runs, budget.steps);
  m.steps = static_cast<int64_t>(budget.steps);
  if (m.checkpoint_every_steps == at_the_end) m.checkpoint_every_steps = m.steps;
  check_simulable(budget, runs, expected_events(m));
}

// Passes a run's progress on from its child process, at most four times a second.
class ProgressPacer {
public:
  explicit ProgressPacer(const ProgressSender& send) : send_(send) {}
  void report(int runs_done, double simulated_seconds) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::milliseconds(250);
    send_(std::to_string(runs_done) + " " + format("%.17g", simulated_seconds));
  }

private:
  const ProgressSender& send_;
  std::chrono::steady_clock::time_point next_{};
};

// The runs, in a child process like every simulation: Ctrl-C and
// replay.cancel stop them there (Interrupted).
std::vector<RunResult> simulate_runs(const RunModel& m, uint64_t first_seed, int runs, const TrainRequest& request) {
  ChildOptions options;
  options.cancel = request.replay.cancel;
  if (request.on_progress)
    options.on_message = [&](const std::string& message) {
      TrainProgress progress;
      progress.runs = runs;
      if (std::sscanf(message.c_str(), "%d %lf", &progress.runs_done, &progress.simulated_seconds) == 2)
        request.on_progress(progress);
    };
  const std::string cbor = run_in_child(
      [&](const ProgressSender& send) {
        ProgressPacer pacer(send);
        std::vector<RunResult> results;
        for (int k = 0; k < runs; ++k) {
          pacer.report(k, 0);
          results.push_back(simulate_run(m, first_seed + k, k == 0, [&](double seconds) { pacer.report(k, seconds); }));
        }
        const std::vector<uint8_t> bytes = nlohmann::json::to_cbor(results);
        return std::string(bytes.begin(), bytes.end());
      },
      options);
  return nlohmann::json::from_cbor(cbor).get<std::vector<RunResult>>();
}

}  // namespace

TrainPlan plan_training(const Scenario& s, const TrainRequest& request) {
  const int runs = std::max(1, request.runs);
  const Budget budget = budget_of(s, request);
  if (request.days <= 0) check_simulable(budget, runs, budget.steps);  // before the long step simulation
  TrainPlan plan;
  plan.step = simulate(s, request.replay);
  RunModel& m = plan.model;
  m.step_seconds = m.degraded_step_seconds = plan.step.timeline.step_seconds;
  if (!(m.step_seconds > 0)) throw std::runtime_error("the step simulation took no time: nothing to train with");

  const std::vector<double> shards = checkpoint_bytes_per_rank(s, plan.step.workload, plan.step.program);
  for (double b : shards) plan.checkpoint_bytes += b;
  const CheckpointConfig& ckpt = s.run.checkpoint;
  m.checkpoint_write_seconds = storage_transfer_seconds(shards, s.cluster.topology, ckpt.storage_write_bytes_per_second);
  m.checkpoint_read_seconds = storage_transfer_seconds(shards, s.cluster.topology, ckpt.storage_read_bytes_per_second);

  const ReliabilityConfig& rel = s.run.reliability;
  m.reliability = rel;
  const int world = plan.step.program.world_size;
  const double nodes = std::ceil(static_cast<double>(world) / s.cluster.topology.gpus_per_node);
  const Fabric fabric(s.cluster.topology, world);
  const LinkCounts links = count_links(fabric);
  m.sources = {{Component::gpu, rate(world, rel.gpu_mtbf_hours), true},
               {Component::node, rate(nodes, rel.node_mtbf_hours), true},
               {Component::link, rate(links.stopping, rel.link_mtbf_hours), true},
               {Component::link, rate(links.redundant, rel.link_mtbf_hours), false},
               {Component::switch_, rate(links.leaf_switches, rel.switch_mtbf_hours), true}};
  double stop_rate = 0;
  for (const FailureSource& source : m.sources) stop_rate += source.stops_job ? source.rate_per_second : 0;
  plan.stop_mtbf_seconds = stop_rate > 0 ? 1 / stop_rate : 0;

  bool degrades = m.sources[3].rate_per_second > 0, scheduled_stops = false;
  for (size_t i = 0; i < rel.scheduled.size(); ++i) {
    const ScheduledFailure& f = rel.scheduled[i];
    const std::string field = "reliability.failures[" + std::to_string(i) + "].";
    FailureSource source{f.component, 0, true};
    if (f.component == Component::link) {
      int link = -1;
      for (size_t l = 0; l < fabric.links().size(); ++l)
        if (fabric.links()[l].name == f.link) link = static_cast<int>(l);
      if (link < 0) throw InputError(s.source, field + "link", "no link '" + f.link + "' in this cluster");
      source.stops_job = !fabric.has_redundancy(link);
      degrades = degrades || !source.stops_job;
    } else {
      const double count = f.component == Component::gpu ? world : f.component == Component::node ? nodes : links.leaf_switches;
      if (f.index >= count)
        throw InputError(s.source, field + "index", "no " + to_string(f.component) + " " + std::to_string(f.index) +
                                                        " (the cluster has " + std::to_string(static_cast<int64_t>(count)) + ")");
    }
    scheduled_stops = scheduled_stops || source.stops_job;
    m.scheduled.emplace_back(f.at_seconds, source);
  }
  if (degrades && links.representative_redundant >= 0) {
    ReplayOptions degraded = request.replay;
    degraded.failures.push_back(losing_one_of(fabric, links.representative_redundant));
    // A lost cable cannot speed a step up; the max only hides rounding in the flow solver.
    m.degraded_step_seconds = std::max(m.step_seconds, simulate(s, degraded).timeline.step_seconds);
  }

  choose_checkpoint_interval(plan, ckpt, scheduled_stops);
  choose_steps(plan, budget, request, runs);

  const double horizon = m.wall_limit_seconds > 0 ? m.wall_limit_seconds : failure_free_seconds(m);
  for (size_t i = 0; i < rel.scheduled.size(); ++i)
    if (rel.scheduled[i].at_seconds > horizon)
      throw InputError(s.source, "reliability.failures[" + std::to_string(i) + "].at_hours",
                       "after the end of the run (" + std::to_string(horizon / hour) + " h without failures)");

  m.gpus = world + static_cast<double>(rel.spare_nodes) * s.cluster.topology.gpus_per_node;
  m.price_per_gpu_hour = s.cluster.price_per_gpu_hour;
  plan.runs = simulate_runs(m, rel.seed, runs, request);
  return plan;
}

namespace {

struct Summary {
  double mean = 0, p10 = 0, p50 = 0, p90 = 0;
};

template <typename Get>
Summary summarize(const std::vector<RunResult>& runs, Get get) {
  std::vector<double> values;
  for (const RunResult& r : runs) values.push_back(get(r));
  std::sort(values.begin(), values.end());
  Summary s;
  for (double v : values) s.mean += v / values.size();
  auto at = [&](double q) { return values[static_cast<size_t>(q * (values.size() - 1) + 0.5)]; };
  s.p10 = at(0.1), s.p50 = at(0.5), s.p90 = at(0.9);
  return s;
}

nlohmann::json to_json(const Summary& s) { return {{"mean", s.mean}, {"p10", s.p10}, {"p50", s.p50}, {"p90", s.p90}}; }

// "12.00 h mean (p10 11.00, p50 12.00, p90 13.00)" of a summary in `unit`, `decimals` after the point
// (none: with commas).
std::string mean_and_percentiles(const nlohmann::json& summary, double unit, const char* unit_name, int decimals) {
  auto number = [&](const char* key) {
    const double value = summary[key].get<double>() / unit;
    if (decimals == 0) return with_commas(value);
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return std::string(text);
  };
  return number("mean") + unit_name + " mean (p10 " + number("p10") + ", p50 " + number("p50") + ", p90 " + number("p90") + ")";
}

}  // namespace

nlohmann::json to_json(const TrainPlan& plan) {
  const RunModel& m = plan.model;
  const auto& runs = plan.runs;
  const double tokens_per_step = plan.step.workload.tokens_per_step;
  nlohmann::json failures = nlohmann::json::object();
  for (const RunResult& r : runs)
    for (const auto& [component, count] : r.failures)
      failures[component] = failures.value(component, 0.0) + static_cast<double>(count) / runs.size();
  return {{"scenario", nlohmann::json(plan.step.report.scenario_summary)},
          {"step_time_s", m.step_seconds},
          {"degraded_step_time_s", m.degraded_step_seconds},
          {"steps", m.steps},
          {"steps_rule", plan.steps_rule},
          {"tokens_per_step", tokens_per_step},
          {"wall_limit_s", m.wall_limit_seconds > 0 ? nlohmann::json(m.wall_limit_seconds) : nlohmann::json()},
          {"checkpoint",
           {{"bytes", plan.checkpoint_bytes},
            {"write_s", m.checkpoint_write_seconds},
            {"read_s", m.checkpoint_read_seconds},
            {"every_steps", m.checkpoint_every_steps},
            {"rule", plan.interval_rule}}},
          {"job_stopping_mtbf_s", plan.stop_mtbf_seconds},
          {"runs", runs.size()},
          {"wall_time_s", to_json(summarize(runs, [](auto& r) { return r.wall_seconds; }))},
          {"goodput", to_json(summarize(runs, [](auto& r) { return r.goodput(); }))},
          {"steps_done", to_json(summarize(runs, [](auto& r) { return static_cast<double>(r.steps); }))},
          {"tokens_done", to_json(summarize(runs, [&](auto& r) { return r.steps * tokens_per_step; }))},
          {"lost_s",
           {{"checkpoint_writes", summarize(runs, [](auto& r) { return r.checkpoint_seconds; }).mean},
            {"lost_work", summarize(runs, [](auto& r) { return r.lost_seconds; }).mean},
            {"restarts", summarize(runs, [](auto& r) { return r.restart_seconds; }).mean},
            {"degraded_links", summarize(runs, [](auto& r) { return r.degraded_seconds; }).mean}}},
          {"failures_per_run", failures},
          {"cost_usd", to_json(summarize(runs, [](auto& r) { return r.cost; }))},
          {"billed_gpus", m.gpus},
          {"price_per_gpu_hour", m.price_per_gpu_hour}};
}

std::string to_text(const TrainPlan& plan) {
  const RunModel& m = plan.model;
  const nlohmann::json j = to_json(plan);
  const std::string runs = " over " + std::to_string(plan.runs.size()) + " runs";
  std::string out = "simtrain train: " + plan.step.report.scenario_name + "\n";
  for (const std::string& summary_line : plan.step.report.scenario_summary_lines) out += summary_line + "\n";
  out += "\n";
  auto line = [&](const std::string& label, const std::string& value) { add_line(out, label, value); };
  line("step time", format("%.4f s (simulated)", m.step_seconds) +
                        (m.degraded_step_seconds != m.step_seconds
                             ? format(", %.4f s with one redundant link down", m.degraded_step_seconds)
                             : ""));
  line("steps", with_commas(static_cast<double>(m.steps)) + " (" +
                    with_commas(m.steps * j["tokens_per_step"].get<double>()) + " tokens) " + plan.steps_rule);
  line("checkpoint", format("%.1f GB", plan.checkpoint_bytes / 1e9) + format(", write %.1f s", m.checkpoint_write_seconds) +
                         format(", read %.1f s", m.checkpoint_read_seconds) + "; " +
                         (m.checkpoint_every_steps > 0 ? "every " + std::to_string(m.checkpoint_every_steps) + " steps: "
                                                       : "none: ") +
                         plan.interval_rule);
  line("job-stopping MTBF", plan.stop_mtbf_seconds > 0 ? format("%.2f h", plan.stop_mtbf_seconds / hour) : "no failures");
  if (m.wall_limit_seconds > 0)
    line("trained", mean_and_percentiles(j["steps_done"], 1, " steps", 0) + ", " +
                        with_commas(j["tokens_done"]["mean"].get<double>()) + " tokens mean," +
                        format(m.wall_limit_seconds == day ? " in %g day" : " in %g days", m.wall_limit_seconds / day) + runs);
  const bool all_trained = std::all_of(plan.runs.begin(), plan.runs.end(), [&](auto& r) { return r.steps == m.steps; });
  if (all_trained && !plan.steps_fill_days) {
    // Days for long runs, hours for short ones.
    const bool in_days = j["wall_time_s"]["mean"].get<double>() >= 2 * day;
    line("time to train", mean_and_percentiles(j["wall_time_s"], in_days ? day : hour, in_days ? " days" : " h", 2) + runs);
  }
  const auto& goodput = j["goodput"];
  line("goodput", format("%.1f %% mean", 100 * goodput["mean"].get<double>()) +
                      format(" (p10 %.1f %%", 100 * goodput["p10"].get<double>()) +
                      format(", p90 %.1f %%)", 100 * goodput["p90"].get<double>()) + "  (useful training time / wall time)");
  const auto& lost = j["lost_s"];
  line("time lost (mean)", format("checkpoints %.1f h", lost["checkpoint_writes"].get<double>() / hour) +
                               format(", lost work %.1f h", lost["lost_work"].get<double>() / hour) +
                               format(", restarts %.1f h", lost["restarts"].get<double>() / hour) +
                               format(", degraded links %.1f h", lost["degraded_links"].get<double>() / hour));
  std::string failures;
  for (const auto& [component, count] : j["failures_per_run"].items())
    failures += (failures.empty() ? "" : ", ") + component + format(" %.1f", count.get<double>());
  line("failures (mean)", failures.empty() ? "none" : failures);
  if (m.price_per_gpu_hour > 0)
    line("cost", format("$%.0f mean", j["cost_usd"]["mean"].get<double>()) + format(" (%.0f GPUs", m.gpus) +
                     format(" at $%.2f per GPU-hour)", m.price_per_gpu_hour));
  return out;
}

void write_run_trace(std::ostream& out, const RunResult& run) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
      << R"({"ph":"M","pid":0,"name":"process_name","args":{"name":"training run"}})";
  for (const RunEvent& e : run.events) {
    char event[400];
    if (e.kind == "failure")
      std::snprintf(event, sizeof event, R"({"ph":"i","s":"g","pid":0,"tid":0,"name":"failure: %s","ts":%.0f})",
                    e.detail.c_str(), e.start_seconds * 1e6);
    else
      std::snprintf(event, sizeof event, R"({"ph":"X","pid":0,"tid":0,"name":"%s","ts":%.0f,"dur":%.0f,"args":{"detail":"%s"}})",
                    e.kind.c_str(), e.start_seconds * 1e6, (e.end_seconds - e.start_seconds) * 1e6, e.detail.c_str());
    out << ",\n" << event;
  }
  out << "\n]}\n";
}

}  // namespace simtrain
