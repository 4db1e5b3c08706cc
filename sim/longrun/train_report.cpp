// The report of a training plan: the JSON document, the text summary and the
// first run's timeline as a Chrome trace.
#include "sim/longrun/train.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

constexpr double hour = 3600, day = 86400, GiB = 1024.0 * 1024 * 1024;

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
// with thousands separators; of one run, "12.00 h".
std::string mean_and_percentiles(const nlohmann::json& summary, size_t runs, double unit, const char* unit_name,
                                 int decimals) {
  auto number = [&](const char* key) { return with_commas(summary[key].get<double>() / unit, decimals); };
  if (runs == 1) return number("mean") + unit_name;
  return number("mean") + unit_name + " mean (p10 " + number("p10") + ", p50 " + number("p50") + ", p90 " +
         number("p90") + ")";
}

nlohmann::json to_json(const CopyInterference& copy) {
  return {{"stretch", copy.stretch}, {"nic_share", copy.nic_share}, {"step_time_s", copy.step_seconds}};
}

nlohmann::json tiers_json(const RunModel& m) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierCopy& copy : m.copies)
    tiers.push_back({{"tier", to_string(copy.tier)},
                     {"ready_after_s", copy.ready_seconds},
                     {"read_s", copy.read_seconds},
                     {"every_saves", copy.every_saves}});
  return tiers;
}

// Per tier: restores per run, and the mean time each cost (restart, work lost).
nlohmann::json restores_json(const std::vector<RunResult>& runs) {
  std::map<std::string, double> count, restart, lost;
  for (const RunResult& r : runs)
    for (const auto& [tier, n] : r.restores) {
      count[tier] += static_cast<double>(n);
      restart[tier] += r.restore_seconds.at(tier);
      lost[tier] += r.restore_lost_seconds.at(tier);
    }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [tier, n] : count)
    out[tier] = {{"count", n / runs.size()}, {"restart_s_each", restart[tier] / n}, {"lost_work_s_each", lost[tier] / n}};
  return out;
}

nlohmann::json policies_json(const std::vector<PolicyResult>& policies) {
  nlohmann::json out = nlohmann::json::array();
  for (const PolicyResult& p : policies)
    out.push_back({{"policy", p.policy},
                   {"mode", to_string(p.mode)},
                   {"persist_every", p.persist_every},
                   {"interval_factor", p.interval_factor},
                   {"every_steps", p.every_steps},
                   {"blocking_s", p.blocking_seconds},
                   {"goodput", p.goodput},
                   {"cost_usd", p.cost}});
  return out;
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
          {"memory", {{"gpu_bytes", plan.step.report.gpu_memory_bytes},
                      {"peak_bytes", plan.step.report.peak_memory_bytes},
                      {"peak_stage", peak_memory_stage(plan.step.report).pipeline_rank},
                      {"out_of_memory", plan.step.report.out_of_memory}}},
          {"failure_rates", {{"source", plan.failure_rates},
                             {"gpu_mtbf_hours", m.reliability.gpu_mtbf_hours},
                             {"node_mtbf_hours", m.reliability.node_mtbf_hours},
                             {"link_mtbf_hours", m.reliability.link_mtbf_hours},
                             {"switch_mtbf_hours", m.reliability.switch_mtbf_hours},
                             {"spare_nodes", m.reliability.spare_nodes}}},
          {"step_time_s", m.step_seconds},
          {"degraded_step_time_s", m.degraded_step_seconds},
          {"steps", m.steps},
          {"steps_rule", plan.steps_rule},
          {"tokens_per_step", tokens_per_step},
          {"wall_limit_s", m.wall_limit_seconds > 0 ? nlohmann::json(m.wall_limit_seconds) : nlohmann::json()},
          {"checkpoint",
           {{"bytes", plan.checkpoint_bytes},
            {"mode", to_string(plan.checkpoint_mode)},
            {"write_s", m.checkpoint_write_seconds},
            {"read_s", m.checkpoint_read_seconds},
            {"save_fraction", plan.phases.save_fraction},
            {"restore_fraction", plan.phases.restore_fraction},
            {"tiers", tiers_json(m)},
            {"persist",
             {{"slowdown_per_save_s", m.persist_slowdown_seconds},
              {"shared", to_json(plan.interference.shared)},
              {"peers", to_json(plan.interference.peers)},
              {"note", plan.interference.note}}},
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
            {"degraded_links", summarize(runs, [](auto& r) { return r.degraded_seconds; }).mean},
            {"persist_slowdown", summarize(runs, [](auto& r) { return r.persist_seconds; }).mean}}},
          {"failures_per_run", failures},
          {"restores_per_run", restores_json(runs)},
          {"cost_usd", to_json(summarize(runs, [](auto& r) { return r.cost; }))},
          {"checkpoint_policies", policies_json(plan.policies)},
          {"billed_gpus", m.gpus},
          {"price_per_gpu_hour", m.price_per_gpu_hour}};
}

std::string to_text(const TrainPlan& plan) {
  const RunModel& m = plan.model;
  const nlohmann::json j = to_json(plan);
  const size_t run_count = plan.runs.size();
  const std::string runs = run_count == 1 ? " (1 run)" : " over " + std::to_string(run_count) + " runs";
  std::string out = "simtrain train: " + plan.step.report.scenario_name + "\n";
  for (const std::string& summary_line : plan.step.report.scenario_summary_lines) out += summary_line + "\n";
  out += "\n";
  auto line = [&](const std::string& label, const std::string& value) { add_line(out, label, value); };
  const StepReport& step = plan.step.report;
  line("memory per GPU", format("%.1f GiB", step.peak_memory_bytes / GiB) +
                             format(" of %.0f GiB", step.gpu_memory_bytes / GiB) +
                             (step.out_of_memory ? "  OUT OF MEMORY, priced anyway (--ignore-memory)" : "  fits") +
                             " (peak: stage " + std::to_string(peak_memory_stage(step).pipeline_rank) + ")");
  line("step time", format("%.4f s (simulated)", m.step_seconds) +
                        (m.degraded_step_seconds != m.step_seconds
                             ? format(", %.4f s with one redundant link down", m.degraded_step_seconds)
                             : ""));
  line("steps", with_commas(static_cast<double>(m.steps)) + " (" +
                    with_commas(m.steps * j["tokens_per_step"].get<double>()) + " tokens) " + plan.steps_rule);
  line("failure rates", plan.failure_rates);
  const std::string every = (m.checkpoint_every_steps > 0 ? "every " + with_commas(double(m.checkpoint_every_steps)) + " steps: "
                                                           : "none: ") + plan.interval_rule;
  if (plan.checkpoint_mode == CheckpointMode::sync && m.copies.size() == 1) {
    line("checkpoint", with_commas(plan.checkpoint_bytes / 1e9, 1) + " GB" + format(", write %.1f s", m.checkpoint_write_seconds) +
                           format(", read %.1f s", m.checkpoint_read_seconds) + "; " + every);
  } else {
    line("checkpoint", with_commas(plan.checkpoint_bytes / 1e9, 1) + " GB, " + to_string(plan.checkpoint_mode) +
                           format(" saves: training stops %.2f s", m.checkpoint_write_seconds) + "; " + every);
    std::string tiers;
    for (const TierCopy& copy : m.copies)
      tiers += (tiers.empty() ? "" : "; ") + to_string(copy.tier) +
               (copy.ready_seconds > 0 ? format(" %.1f s later", copy.ready_seconds) : " at once") +
               (copy.every_saves > 1 ? " (every " + std::to_string(copy.every_saves) + " saves)" : "") +
               format(", read %.2f s", copy.read_seconds);
    line("checkpoint tiers", tiers);
    if (plan.phases.save_fraction < 1)
      line("incremental", format("a save writes %.1f %%", 100 * plan.phases.save_fraction) +
                              format(" of the checkpoint on average, a restore reads %.2f x it", plan.phases.restore_fraction));
    const PersistInterference& p = plan.interference;
    std::string beside;
    for (const auto& [name, copy] : {std::pair("to the shared storage", p.shared), std::pair("to peers", p.peers)})
      if (copy.nic_share > 0)
        beside += std::string(beside.empty() ? "" : "; ") + "copies " + name + format(" %.2f x as long as alone", copy.stretch) +
                  format(", %.1f %% of the busiest NIC", 100 * copy.nic_share) +
                  format(", step %.4f s", m.step_seconds) + format(" -> %.4f s (replayed)", copy.step_seconds);
    if (!p.note.empty()) beside = p.note;
    if (!beside.empty())
      line("persist beside steps", beside + format(": %.2f s lost per save", m.persist_slowdown_seconds));
  }
  line("job-stopping MTBF", plan.stop_mtbf_seconds > 0 ? with_commas(plan.stop_mtbf_seconds / hour, 2) + " h" : "no failures");
  if (m.wall_limit_seconds > 0)
    line("trained", mean_and_percentiles(j["steps_done"], run_count, 1, " steps", 0) + ", " +
                        with_commas(j["tokens_done"]["mean"].get<double>()) + (run_count == 1 ? " tokens," : " tokens mean,") +
                        format(m.wall_limit_seconds == day ? " in %g day" : " in %g days", m.wall_limit_seconds / day) + runs);
  const bool all_trained = std::all_of(plan.runs.begin(), plan.runs.end(), [&](auto& r) { return r.steps == m.steps; });
  if (all_trained && !plan.steps_fill_days) {
    // Days for long runs, hours for shorter ones, minutes or seconds for short ones.
    const double wall = j["wall_time_s"]["mean"].get<double>();
    const auto [unit, unit_name] = wall >= 2 * day ? std::pair(day, " days")
                                   : wall >= hour  ? std::pair(hour, " h")
                                   : wall >= 60    ? std::pair(60.0, " min")
                                                   : std::pair(1.0, " s");
    line("time to train", mean_and_percentiles(j["wall_time_s"], run_count, unit, unit_name, 2) + runs);
  }
  const auto& goodput = j["goodput"];
  line("goodput", format("%.1f %%", 100 * goodput["mean"].get<double>()) +
                      (run_count == 1 ? ""
                                      : format(" mean (p10 %.1f %%", 100 * goodput["p10"].get<double>()) +
                                            format(", p90 %.1f %%)", 100 * goodput["p90"].get<double>())) +
                      "  (useful training time / wall time)");
  const auto& lost = j["lost_s"];
  line(run_count == 1 ? "time lost" : "time lost (mean)",
       format("checkpoints %.1f h", lost["checkpoint_writes"].get<double>() / hour) +
           format(", lost work %.1f h", lost["lost_work"].get<double>() / hour) +
           format(", restarts %.1f h", lost["restarts"].get<double>() / hour) +
           format(", degraded links %.1f h", lost["degraded_links"].get<double>() / hour) +
           (plan.checkpoint_mode == CheckpointMode::sync
                ? ""
                : format(", steps slowed by persists %.1f h", lost["persist_slowdown"].get<double>() / hour)));
  std::string restores;
  for (const auto& [tier, r] : j["restores_per_run"].items())
    restores += (restores.empty() ? "" : "; ") + tier + format(" %.1f", r["count"].get<double>()) +
                format(" (restart %.1f min", r["restart_s_each"].get<double>() / 60) +
                format(" + lost work %.1f min each)", r["lost_work_s_each"].get<double>() / 60);
  if (!restores.empty() && (plan.checkpoint_mode != CheckpointMode::sync || m.copies.size() > 1))
    line(run_count == 1 ? "restores" : "restores (mean)", restores);
  std::string failures;
  for (const auto& [component, count] : j["failures_per_run"].items())
    failures += (failures.empty() ? "" : ", ") + component + format(" %.1f", count.get<double>());
  line(run_count == 1 ? "failures" : "failures (mean)", failures.empty() ? "none" : failures);
  if (m.price_per_gpu_hour > 0)
    line("cost", dollars(j["cost_usd"]["mean"].get<double>()) + (run_count == 1 ? "" : " mean") +
                     " (" + with_commas(m.gpus) + " GPUs" + format(" at $%.2f per GPU-hour", m.price_per_gpu_hour) +
                     (m.default_price_gpu.empty()
                          ? ")"
                          : ", " + m.default_price_gpu + "'s rental price: cluster.price_per_gpu_hour sets another)"));
  for (size_t i = 0; i < plan.policies.size(); ++i) {
    const PolicyResult& p = plan.policies[i];
    line(i == 0 ? "checkpoint policies (" + std::to_string(policy_runs) + " runs each)" : "",
         std::to_string(i + 1) + ". " + p.policy + format(": goodput %.2f %%", 100 * p.goodput) +
             (m.price_per_gpu_hour > 0 ? ", " + dollars(p.cost) : ""));
  }
  return out;
}

void write_run_trace(std::ostream& out, const RunResult& run) {
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
      << R"({"ph":"M","pid":0,"name":"process_name","args":{"name":"training run"}})";
  if (std::any_of(run.events.begin(), run.events.end(), [](const RunEvent& e) { return e.kind == "persist"; }))
    out << ",\n" << R"({"ph":"M","pid":0,"tid":1,"name":"thread_name","args":{"name":"background checkpoint copies"}})";
  for (const RunEvent& e : run.events) {
    char event[400];
    if (e.kind == "failure")
      std::snprintf(event, sizeof event, R"({"ph":"i","s":"g","pid":0,"tid":0,"name":"failure: %s","ts":%.0f})",
                    e.detail.c_str(), e.start_seconds * 1e6);
    else
      std::snprintf(event, sizeof event, R"({"ph":"X","pid":0,"tid":%d,"name":"%s","ts":%.0f,"dur":%.0f,"args":{"detail":"%s"}})",
                    e.kind == "persist" ? 1 : 0, e.kind.c_str(), e.start_seconds * 1e6,
                    (e.end_seconds - e.start_seconds) * 1e6, e.detail.c_str());
    out << ",\n" << event;
  }
  out << "\n]}\n";
}

}  // namespace simtrain
