#include "train.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "checkpoint_interval.hpp"
#include "engine/storage_transfer.hpp"
#include "input_error.hpp"
#include "memory_model.hpp"
#include "text_format.hpp"

namespace simtrain {

namespace {

constexpr double hour = 3600, day = 86400;

int64_t steps_to_train(const Scenario& s, const TrainRequest& request, double tokens_per_step) {
  if (request.steps > 0) return request.steps;
  const double tokens = request.tokens > 0 ? request.tokens : s.training.train_tokens;
  if (tokens > 0) return static_cast<int64_t>(std::ceil(tokens / tokens_per_step));
  if (request.days > 0) return INT64_MAX / 2;
  throw InputError(s.source, "training.train_tokens", "give the run's length: --tokens, --steps or --days, or this field");
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

}  // namespace

TrainPlan plan_training(const Scenario& s, const TrainRequest& request) {
  TrainPlan plan;
  plan.step = simulate(s, request.replay);
  RunModel& m = plan.model;
  m.step_seconds = m.degraded_step_seconds = plan.step.timeline.step_seconds;
  m.steps = steps_to_train(s, request, plan.step.workload.tokens_per_step);
  if (request.days > 0) m.wall_limit_seconds = request.days * day;

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

  bool degrades = m.sources[3].rate_per_second > 0;
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
    m.scheduled.emplace_back(f.at_seconds, source);
  }
  if (degrades && links.representative_redundant >= 0) {
    ReplayOptions degraded = request.replay;
    degraded.failures.push_back(losing_one_of(fabric, links.representative_redundant));
    // A lost cable cannot speed a step up; the max only hides rounding in the flow solver.
    m.degraded_step_seconds = std::max(m.step_seconds, simulate(s, degraded).timeline.step_seconds);
  }

  if (ckpt.every_steps > 0) {
    m.checkpoint_every_steps = ckpt.every_steps;
    plan.interval_rule = "every " + std::to_string(ckpt.every_steps) + " steps (checkpoint.every_steps)";
  } else if (ckpt.every_minutes > 0) {
    m.checkpoint_every_steps = std::max<int64_t>(1, std::llround(ckpt.every_minutes * 60 / m.step_seconds));
    plan.interval_rule = "every " + std::to_string(ckpt.every_minutes) + " minutes (checkpoint.every_minutes)";
  } else if (plan.stop_mtbf_seconds > 0) {
    const double interval = daly_interval_seconds(m.checkpoint_write_seconds, plan.stop_mtbf_seconds);
    m.checkpoint_every_steps = std::max<int64_t>(1, std::llround(interval / m.step_seconds));
    char rule[160];
    std::snprintf(rule, sizeof rule, "Daly's optimum: %.1f min of training between checkpoints (write %.1f s, MTBF %.2f h)",
                  interval / 60, m.checkpoint_write_seconds, plan.stop_mtbf_seconds / hour);
    plan.interval_rule = rule;
  } else {
    m.checkpoint_every_steps = std::min<int64_t>(m.steps, INT64_MAX / 4);
    plan.interval_rule = "no failures expected: one checkpoint at the end";
  }

  const double horizon = m.wall_limit_seconds > 0 ? m.wall_limit_seconds
                                                  : m.steps * m.step_seconds +
                                                        std::ceil(static_cast<double>(m.steps) / m.checkpoint_every_steps) *
                                                            m.checkpoint_write_seconds;
  for (size_t i = 0; i < rel.scheduled.size(); ++i)
    if (rel.scheduled[i].at_seconds > horizon)
      throw InputError(s.source, "reliability.failures[" + std::to_string(i) + "].at_hours",
                       "after the end of the run (" + std::to_string(horizon / hour) + " h without failures)");

  m.gpus = world + static_cast<double>(rel.spare_nodes) * s.cluster.topology.gpus_per_node;
  m.price_per_gpu_hour = s.cluster.price_per_gpu_hour;
  for (int k = 0; k < std::max(1, request.runs); ++k) plan.runs.push_back(simulate_run(m, rel.seed + k, k == 0));
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

}  // namespace

nlohmann::json to_json(const TrainPlan& plan) {
  const RunModel& m = plan.model;
  const auto& runs = plan.runs;
  nlohmann::json failures = nlohmann::json::object();
  for (const RunResult& r : runs)
    for (const auto& [component, count] : r.failures)
      failures[component] = failures.value(component, 0.0) + static_cast<double>(count) / runs.size();
  return {{"scenario", plan.step.report.scenario_name},
          {"step_time_s", m.step_seconds},
          {"degraded_step_time_s", m.degraded_step_seconds},
          {"steps", m.steps},
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
  std::string out = "simtrain train: " + plan.step.report.scenario_name + "\n";
  auto line = [&](const std::string& label, const std::string& value) { add_line(out, label, value); };
  line("step time", format("%.4f s (simulated)", m.step_seconds) +
                        (m.degraded_step_seconds != m.step_seconds
                             ? format(", %.4f s with one redundant link down", m.degraded_step_seconds)
                             : ""));
  line("steps", std::to_string(m.steps) + (m.wall_limit_seconds > 0 ? format(" at most, within %.1f days", m.wall_limit_seconds / day) : ""));
  line("checkpoint", format("%.1f GB", plan.checkpoint_bytes / 1e9) + format(", write %.1f s", m.checkpoint_write_seconds) +
                         format(", read %.1f s", m.checkpoint_read_seconds) + "; every " +
                         std::to_string(m.checkpoint_every_steps) + " steps: " + plan.interval_rule);
  line("job-stopping MTBF", plan.stop_mtbf_seconds > 0 ? format("%.2f h", plan.stop_mtbf_seconds / hour) : "no failures");
  const auto& wall = j["wall_time_s"];
  // Days for long runs, hours for short ones.
  const bool in_days = wall["mean"].get<double>() >= 2 * day;
  const double unit = in_days ? day : hour;
  const char* unit_name = in_days ? " days" : " h";
  line("time to train", format("%.2f", wall["mean"].get<double>() / unit) + unit_name + " mean" +
                            format(" (p10 %.2f", wall["p10"].get<double>() / unit) +
                            format(", p50 %.2f", wall["p50"].get<double>() / unit) +
                            format(", p90 %.2f)", wall["p90"].get<double>() / unit) + " over " +
                            std::to_string(plan.runs.size()) + " runs" +
                            (m.wall_limit_seconds > 0 ? format(", %.0f steps done on average", j["steps_done"]["mean"].get<double>()) : ""));
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
