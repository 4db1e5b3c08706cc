#include "sim/longrun/train.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <functional>
#include <utility>
#include <stdexcept>

#include "sim/base/child_process.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/text_format.hpp"
#include "sim/longrun/checkpoint_cost.hpp"
#include "sim/longrun/checkpoint_interval.hpp"
#include "sim/longrun/checkpoint_policy.hpp"
#include "sim/longrun/failure_sources.hpp"
#include "sim/longrun/published_failure_rates.hpp"
#include "sim/step/memory_model.hpp"

namespace simtrain {

// The runs come back from their child process as CBOR (exact doubles).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunEvent, kind, start_seconds, end_seconds, detail)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunResult, wall_seconds, useful_seconds, steps, checkpoint_seconds, lost_seconds,
                                   restart_seconds, degraded_seconds, persist_seconds, checkpoints, restarts, failures,
                                   restores, restore_seconds, restore_lost_seconds, cost, events)

namespace {

constexpr double day = 86400;
constexpr double GiB = 1024.0 * 1024 * 1024;

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
  if (m.checkpoint_every_steps == checkpoint_at_the_end) m.checkpoint_every_steps = m.steps;
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


// The job's peak memory per GPU, from the pipeline schedule alone; refused
// where it exceeds the GPU's: a job that cannot run has no time or cost.
void check_memory(const Scenario& s, const TrainRequest& request) {
  if (request.ignore_memory) return;
  const std::vector<MemoryBreakdown> stages = memory_per_pipeline_rank(s, build_workload(s));
  const auto peak = std::max_element(stages.begin(), stages.end(),
                                     [](auto& a, auto& b) { return a.total_bytes() < b.total_bytes(); });
  if (peak->total_bytes() <= s.cluster.gpu.memory_bytes) return;
  throw InputError(s.source, "",
                   format("does not fit in memory: %.1f GiB", peak->total_bytes() / GiB) +
                       format(" of %.0f GiB per GPU", s.cluster.gpu.memory_bytes / GiB) + " at pipeline stage " +
                       std::to_string(peak - stages.begin()) +
                       " (simtrain simulate shows what it holds); a job that cannot run has no time to train or cost "
                       "(--ignore-memory prices it anyway)");
}

// The failure rates the runs draw from: the scenario's, published ones where it states none, or none.
Scenario with_failure_rates(const Scenario& stated, const TrainRequest& request, std::string& description) {
  Scenario s = stated;
  ReliabilityConfig& r = s.run.reliability;
  if (request.no_failures) {
    r.gpu_mtbf_hours = r.node_mtbf_hours = r.link_mtbf_hours = r.switch_mtbf_hours = 0;
    r.scheduled.clear();
    description = "none (--no-failures)";
  } else if (!r.rates_stated && r.scheduled.empty()) {
    const PublishedRates published = published_failure_rates(r, r.spares_stated, static_cast<int>(s.cluster.num_gpus),
                                                             s.cluster.topology.gpus_per_node, llama3_physical_links());
    r = published.reliability;
    description = published.description;
  } else {
    description = "the scenario's (" + s.source + ": reliability)";
  }
  return s;
}

// The runs to simulate: as asked, or default_runs where the event limit
// allows (one where nothing fails: every run is the same).
int runs_to_simulate(const TrainRequest& request, const RunModel& m, double events_per_run) {
  if (request.runs > 0) return request.runs;
  const bool anything_fails = !m.scheduled.empty() || std::any_of(m.sources.begin(), m.sources.end(), [](auto& f) {
    return f.rate_per_second > 0;
  });
  if (!anything_fails) return 1;
  return static_cast<int>(std::clamp(std::floor(max_simulated_events / events_per_run), 1.0, double(default_runs)));
}

// What a mode's background copies do to the steps: replayed beside them
// once per mode and peer count.
class InterferenceReplays {
public:
  InterferenceReplays(const Scenario& s, const TrainRequest& request, const CheckpointCost& cost, double step_seconds,
                      bool saves)
      : s_(s), request_(request), cost_(cost), step_seconds_(step_seconds), saves_(saves) {}

  PersistInterference operator()(CheckpointMode mode, int64_t peer_replicas) {
    const auto key = std::pair(mode, peer_replicas);
    if (auto found = replayed_.find(key); found != replayed_.end()) return found->second;
    PersistInterference p;
    p.shared.step_seconds = p.peers.step_seconds = step_seconds_;
    if (mode != CheckpointMode::sync && saves_) {
      Scenario with_peers = s_;
      with_peers.run.checkpoint.peer_replicas = peer_replicas;
      p = persist_interference(with_peers, request_.replay, step_seconds_, cost_, true, peer_replicas > 0);
    }
    return replayed_[key] = p;
  }

private:
  const Scenario& s_;
  const TrainRequest& request_;
  const CheckpointCost& cost_;
  double step_seconds_;
  bool saves_;
  std::map<std::pair<CheckpointMode, int64_t>, PersistInterference> replayed_;
};

// The saves in the scenario's mode: their phases and interval.
void plan_saves(TrainPlan& plan, const CheckpointConfig& c, const CheckpointCost& cost, InterferenceReplays& replays,
                bool scheduled_stops) {
  plan.checkpoint_mode = c.mode;
  plan.interference = replays(c.mode, c.peer_replicas);
  const SaveSchedule schedule =
      schedule_saves(plan.model, c, cost, plan.interference, plan.stop_mtbf_seconds, scheduled_stops);
  plan.phases = schedule.phases;
  plan.interval_rule = schedule.interval.rule;
}

}  // namespace

TrainPlan plan_training(const Scenario& stated, const TrainRequest& request) {
  TrainPlan plan;
  check_memory(stated, request);
  const Scenario s = with_failure_rates(stated, request, plan.failure_rates);
  const Budget budget = budget_of(s, request);
  if (request.days <= 0) check_simulable(budget, std::max(1, request.runs), budget.steps);  // before the long step simulation
  plan.step = simulate(s, request.replay);
  RunModel& m = plan.model;
  m.step_seconds = m.degraded_step_seconds = plan.step.timeline.step_seconds;
  if (!(m.step_seconds > 0)) throw std::runtime_error("the step simulation took no time: nothing to train with");

  const CheckpointCost checkpoint = checkpoint_cost(s, plan.step.workload, plan.step.program);
  plan.checkpoint_bytes = checkpoint.bytes;
  const int world = plan.step.program.world_size;
  const ClusterFailures failures = cluster_failures(s, world);
  m.reliability = s.run.reliability;
  m.sources = failures.random;
  m.scheduled = failures.scheduled;
  plan.stop_mtbf_seconds = failures.stop_mtbf_seconds;
  if (failures.degrading_failure) {
    ReplayOptions degraded = request.replay;
    degraded.failures.push_back(*failures.degrading_failure);
    // A lost cable cannot speed a step up; the max only hides rounding in the flow solver.
    m.degraded_step_seconds = std::max(m.step_seconds, simulate(s, degraded).timeline.step_seconds);
  }

  const CheckpointConfig& c = s.run.checkpoint;
  const bool saves = c.every_steps > 0 || c.every_minutes > 0 || plan.stop_mtbf_seconds > 0 || failures.scheduled_stops;
  InterferenceReplays replays(s, request, checkpoint, m.step_seconds, saves);
  plan_saves(plan, c, checkpoint, replays, failures.scheduled_stops);
  choose_steps(plan, budget, request, std::max(1, request.runs));
  const int runs = runs_to_simulate(request, m, expected_events(m));
  check_scheduled_before(s, m.wall_limit_seconds > 0 ? m.wall_limit_seconds : failure_free_seconds(m));

  m.gpus = world + static_cast<double>(m.reliability.spare_nodes) * s.cluster.topology.gpus_per_node;
  m.price_per_gpu_hour = s.cluster.price_per_gpu_hour;
  if (s.cluster.default_price) m.default_price_gpu = s.cluster.gpu.name;
  if (request.checkpoint_policies) {
    if (expected_events(m) * policy_runs * 12 > max_simulated_events)
      throw InputError("train", "--checkpoint-policies",
                       format("about %.3g simulated steps and failures a run", expected_events(m)) +
                           ", " + std::to_string(policy_runs) + " runs for each of 12 policies" +
                           format(": more than %.0e can be simulated", max_simulated_events));
    const int nodes = (world + s.cluster.topology.gpus_per_node - 1) / s.cluster.topology.gpus_per_node;
    plan.policies = rank_checkpoint_policies(m, c, checkpoint, nodes, plan.stop_mtbf_seconds, failures.scheduled_stops,
                                             policy_runs, std::ref(replays));
  }
  plan.runs = simulate_runs(m, m.reliability.seed, runs, request);
  return plan;
}

}  // namespace simtrain
