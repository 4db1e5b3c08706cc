#include "live_run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "backend_factory.hpp"
#include "communicator_plan.hpp"
#include "rank_checkpoint.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/output_files.hpp"
#include "sim/base/text_format.hpp"
#include "sim/model/workload.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/trace.hpp"
#include "sim/step/report.hpp"
#include "step_estimate.hpp"

namespace simtrain {

namespace {

// The scenario as requested, then scaled down by --layers / --micro-batches.
struct ScaledScenario {
  Scenario scenario;
  std::vector<std::string> overrides;  // --set, then the scaling as --set: what builds the Program it runs
  std::vector<std::string> scaled;     // "layers 96 -> 4", for the report
};

ScaledScenario load_scaled(const LiveRequest& request) {
  const Scenario original = load_scenario(request.scenario, request.overrides);
  ScaledScenario result;
  result.overrides = request.overrides;
  std::vector<std::string>& overrides = result.overrides;
  if (request.layers && *request.layers != original.model.num_layers) {
    overrides.push_back("model.num_hidden_layers=" + std::to_string(*request.layers));
    result.scaled.push_back("layers " + std::to_string(original.model.num_layers) + " -> " +
                            std::to_string(*request.layers));
  }
  if (request.micro_batches && *request.micro_batches != original.micro_batches()) {
    const int64_t global = *request.micro_batches * original.training.micro_batch_size * original.parallel.data;
    overrides.push_back("training.global_batch_size=" + std::to_string(global));
    result.scaled.push_back("micro-batches " + std::to_string(original.micro_batches()) + " -> " +
                            std::to_string(*request.micro_batches) + " (global batch " +
                            std::to_string(original.training.global_batch_size) + " -> " + std::to_string(global) +
                            ")");
  }
  result.scenario = load_scenario(request.scenario, overrides);
  return result;
}

// What the live executors cannot run, refused before anything starts.
void check_runnable(const Program& program, const Scenario& scenario, int processes) {
  if (program.world_size != processes)
    throw InputError(scenario.source, "cluster.num_gpus",
                     "the scenario needs " + std::to_string(program.world_size) + " processes (tp " +
                         std::to_string(program.tensor_size) + " x pp " + std::to_string(program.pipeline_size) +
                         " x dp " + std::to_string(program.world_size / program.tensor_size / program.pipeline_size) +
                         "), the launcher started " + std::to_string(processes) + " (mpirun -np " +
                         std::to_string(program.world_size) + ")");
  if (program.servers > 0)
    throw InputError(scenario.source, "parallelism.dp_sync", "parameter servers cannot be run live");
  for (const Work& work : program.works)
    if (work.fixed_seconds > 0)
      throw InputError(scenario.source, "parallelism.gradient_compression",
                       "gradient compression has no kernel to run live");
  if (scenario.training.dtype == Dtype::fp4)
    throw InputError(scenario.source, "training.dtype", "fp4 has no kernel to run live (its block-scaled GEMMs are simulated only)");
  if (scenario.training.dtype == Dtype::fp8 && scenario.training.fp8_recipe == Fp8Recipe::mxfp8)
    throw InputError(scenario.source, "training.fp8_recipe",
                     "mxfp8 has no kernel to run live (its block-scaled GEMMs are simulated only)");
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds < 1 ? "%.2f ms" : "%.3f s", seconds < 1 ? seconds * 1e3 : seconds);
  return text;
}

// The backend of every rank, or a failure of all of them where one cannot
// make its own (no CUDA device), said once.
std::unique_ptr<Backend> agreed_backend(const std::string& name, ProcessWorld& world, const Scenario& scenario) {
  std::unique_ptr<Backend> backend;
  std::string error;
  try {
    backend = make_backend(name, world, scenario);
  } catch (const InputError&) {
    throw;  // the same on every rank: a backend unknown or not built in, a bad kernel profile
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (const std::string errors = agree_on_errors(world, error); !errors.empty())
    throw AgreedLiveError("the " + name + " backend cannot start: " + errors);
  return backend;
}

// Refused on every rank when one lacks the memory or has a task its backend
// cannot run, before anything is allocated.
void check_memory(ProcessWorld& world, const Backend& backend, const Program& program) {
  std::string error;
  try {
    const double needed = backend.bytes_needed(program, world.rank());
    const double available = backend.bytes_available();
    if (needed > available)
      error = "out of memory: needs " + format_bytes(needed) + " for its kernels and buffers, " +
              format_bytes(available) + " are free";
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (const std::string errors = agree_on_errors(world, error); !errors.empty())
    throw AgreedLiveError("refused before launching anything: " + errors +
                          ". Scale it down: --layers, --micro-batches, or --set seq_length=... / hidden_size=...");
}

// The step's estimate, the same on every rank: every rank estimates its
// works at once (the host backend times its kernels), rank 0 takes the
// critical path and hands it to all.
double agreed_step_estimate(ProcessWorld& world, const WorkEstimate& estimate, const Program& program) {
  const std::vector<std::vector<double>> by_rank = world.gather(estimate.work_seconds);
  double seconds = world.rank() == 0 ? estimated_step_seconds(program, by_rank) : 0;
  std::string bytes(reinterpret_cast<const char*>(&seconds), sizeof seconds);
  world.broadcast(bytes, 0);
  std::memcpy(&seconds, bytes.data(), sizeof seconds);
  return seconds;
}

// The fewest layers and micro-batches the layout takes, as flags, where the
// scenario has more and takes them; "" where neither.
std::string shrink_flags(const LiveRequest& request, const Scenario& scenario) {
  const int64_t fewest_layers = scenario.parallel.pipeline * scenario.virtual_stages();
  const int64_t fewest_micro_batches = scenario.parallel.pipeline;
  LiveRequest smaller = request;
  std::vector<std::string> flags;
  if (fewest_layers < scenario.model.num_layers) {
    smaller.layers = fewest_layers;
    flags.push_back("--layers " + std::to_string(fewest_layers));
  }
  if (fewest_micro_batches < scenario.micro_batches()) {
    smaller.micro_batches = fewest_micro_batches;
    flags.push_back("--micro-batches " + std::to_string(fewest_micro_batches));
  }
  if (flags.empty()) return "";
  try {
    load_scaled(smaller);
  } catch (const InputError&) {
    return "";  // an explicit pipeline split, say, that fewer layers do not fit
  }
  return flags.size() == 1 ? flags[0] : flags[0] + " " + flags[1];
}

// The estimate, the watchdog's timeout and, for a long step, how to shrink it.
std::string estimate_text(const LiveRequest& request, const Scenario& scenario, double step_seconds,
                          const std::string& basis, double timeout_seconds) {
  std::string text = "estimated step: " + duration_text(step_seconds) + " on the " + request.backend + " backend (" +
                     basis + ")\nwatchdog: stops the run after " + duration_text(timeout_seconds) +
                     " without a completed task (" +
                     (request.timeout_seconds ? "--timeout" : "default: " + default_timeout_rule()) + ")\n";
  constexpr double long_step_seconds = 60;
  if (step_seconds > long_step_seconds) {
    const std::string flags = shrink_flags(request, scenario);
    text += "to shrink the step: " + (flags.empty() ? "" : flags + ", or ") +
            "smaller kernels: --set hidden_size=... --set seq_length=...\n";
  }
  return text;
}

std::string checkpoint_text(const CheckpointFigures& figures, const std::string& field) {
  return "step " + std::to_string(figures.step) + ", " + format_bytes(figures.bytes) + " in " +
         seconds_text(figures.slowest_seconds) + ": " + format("%.3g GB/s", figures.bytes_per_second() / 1e9) +
         " (" + field + ")";
}

// One rank's record as doubles, for the gather: per task id, start, end,
// op count, op seconds.
std::vector<double> pack(const RankRecord& record) {
  std::vector<double> values;
  for (size_t i = 0; i < record.task_ids.size(); ++i) {
    values.insert(values.end(), {double(record.task_ids[i]), record.timings[i].start, record.timings[i].end,
                                 double(record.op_seconds[i].size())});
    values.insert(values.end(), record.op_seconds[i].begin(), record.op_seconds[i].end());
  }
  return values;
}

Timeline unpack(const std::vector<std::vector<double>>& ranks, const Program& program, const std::string& device,
                Dtype dtype) {
  Timeline timeline;
  timeline.tasks.assign(program.tasks.size(), {});
  timeline.live = LiveRecord{device, dtype, std::vector<std::vector<double>>(program.tasks.size())};
  for (const std::vector<double>& values : ranks)
    for (size_t i = 0; i + 4 <= values.size();) {
      const int id = static_cast<int>(values[i]);
      timeline.tasks[id] = {values[i + 1], values[i + 2]};
      const size_t ops = static_cast<size_t>(values[i + 3]);
      timeline.live->op_seconds[id].assign(values.begin() + i + 4, values.begin() + i + 4 + ops);
      timeline.step_seconds = std::max(timeline.step_seconds, values[i + 2]);
      i += 4 + ops;
    }
  return timeline;
}


void print_report(std::ostream& out, const Scenario& scenario, const Workload& workload, const Program& program,
                  const Timeline& timeline, const std::vector<std::string>& scaled, const std::string& device,
                  long long checked) {
  std::string text = "live step of " + scenario.name + ": " + std::to_string(program.world_size) +
                     (program.world_size == 1 ? " process, " : " processes, ") + device + "\n";
  std::string scaling;
  for (const std::string& s : scaled) scaling += (scaling.empty() ? "" : "; ") + s;
  add_line(text, "scaled down", scaling.empty() ? "no" : scaling);
  add_line(text, "step time", seconds_text(timeline.step_seconds));
  add_line(text, "tokens/s", with_commas(workload.tokens_per_step / timeline.step_seconds));
  const StepReport timing = timing_report(program, timeline);
  add_line(text, "bubble (mean idle/step)", format("%.1f %%", 100 * timing.bubble_fraction));
  std::map<TaskKind, std::pair<int, double>> kinds;  // tasks and their summed seconds
  for (const Task& t : program.tasks) {
    auto& [count, seconds] = kinds[t.kind];
    count += 1, seconds += timeline.tasks[t.id].end - timeline.tasks[t.id].start;
  }
  add_line(text, "tasks run (each once)", with_commas(double(program.tasks.size())));
  add_line(text, "collectives checked", with_commas(double(checked)) + ", all correct");
  const auto receives = kinds.find(TaskKind::RECV);  // find, not [], which would list "RECV x0"
  add_line(text, "transfers checked", with_commas(receives == kinds.end() ? 0 : receives->second.first) + ", all correct");
  text += "time by task kind (sum over ranks, mean per task):\n";
  for (const auto& [kind, figures] : kinds)
    add_line(text, "  " + to_string(kind) + " x" + std::to_string(figures.first),
             seconds_text(figures.second) + ", " + seconds_text(figures.second / figures.first));
  out << text;
}

// The launcher forwards a rank's output asynchronously, and an abort kills
// every rank at once: give it `delay_seconds` to pass the message on first.
[[noreturn]] void abort_after_output(ProcessWorld& world, int exit_code, int delay_seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(delay_seconds));
  world.abort(exit_code);
  std::abort();  // not reached; gcc does not carry [[noreturn]] through the virtual call
}

// "rank 3: <error>", unless the error names its rank first (the CUDA
// backend's do).
std::string with_rank(int rank, const std::string& error) {
  const std::string prefix = "rank " + std::to_string(rank);
  return error.starts_with(prefix + ":") || error.starts_with(prefix + " ") ? error : prefix + ": " + error;
}

// Ends the run on every rank when a task of one failed or its watchdog saw
// no task complete for the timeout: the ranks still running tell each other
// where they stand (each joins within a watchdog tick of the first, stalled
// or not), the lowest rank answering prints stop_report once for all, and
// every rank aborts.
class RunStop {
public:
  RunStop(ProcessWorld& world, Backend& backend, double timeout_seconds, std::ostream& err)
      : world_(world), backend_(backend), timeout_seconds_(timeout_seconds), err_(err) {}

  [[noreturn]] void failed(const std::string& error) { stop(failed_status + error); }
  [[noreturn]] void stalled(const std::string& waiting_for) { stop(waiting_for); }

private:
  [[noreturn]] void stop(const std::string& status) {
    if (stopping_.exchange(true))  // a queue's failure and the watchdog at once: the first one ends the process
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    // The answers come within a watchdog tick; a rank silent for longer is dead or hung.
    constexpr double listen_seconds = 30;
    const std::map<int, std::string> statuses =
        world_.exchange_status(status, std::min(timeout_seconds_, listen_seconds));
    const bool reporter = statuses.begin()->first == world_.rank();
    const StopReport report = stop_report(statuses, world_.size(), timeout_seconds_);
    if (reporter) err_ << report.text << std::flush;
    abort_communication(backend_);
    abort_after_output(world_, report.exit_code, reporter ? 1 : 3);
  }

  ProcessWorld& world_;
  Backend& backend_;
  const double timeout_seconds_;
  std::ostream& err_;
  std::atomic<bool> stopping_{false};
};

}  // namespace

StopReport stop_report(const std::map<int, std::string>& statuses, int world_size, double timeout_seconds) {
  StopReport report;
  for (const auto& [rank, status] : statuses)
    if (status.starts_with(failed_status))
      report.text += "simtrain live: " + with_rank(rank, status.substr(std::strlen(failed_status))) + "\n";
  if (!report.text.empty()) return report;
  report.exit_code = 3;
  std::string silent;
  for (int r = 0; r < world_size; ++r)
    if (!statuses.count(r)) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
  report.text = "simtrain live: no task completed for " + format("%g", timeout_seconds) + " s; " +
                (silent.empty() ? "every rank answered" : "rank " + silent + " did not answer (dead or hung)") + "\n";
  for (const auto& [rank, status] : statuses) report.text += "  rank " + std::to_string(rank) + ": " + status + "\n";
  return report;
}

int run_live(const LiveRequest& request, ProcessWorld& world, std::ostream& out, std::ostream& err) {
  OutputFiles outputs(out, request.existing_files);  // checked on every rank before anything runs; rank 0 writes
  outputs.add("--trace", request.trace_path);
  const ScaledScenario scaled = load_scaled(request);
  const Scenario& scenario = scaled.scenario;
  outputs.refuse_inputs(scenario.files_read);
  const Workload workload = build_workload(scenario);
  const Program program = build_program(scenario, workload);
  check_runnable(program, scenario, world.size());
  const int rank = world.rank();
  if (request.fault && (request.fault->rank < 0 || request.fault->rank >= program.world_size ||
                        request.fault->task < 0 || request.fault->task >= int(program.tasks.size()) ||
                        program.tasks[request.fault->task].rank != request.fault->rank))
    throw InputError("--inject-fault", "", "task " + std::to_string(request.fault->task) + " is not a task of rank " +
                                               std::to_string(request.fault->rank));

  std::unique_ptr<Backend> backend = agreed_backend(request.backend, world, scenario);
  check_memory(world, *backend, program);
  const WorkEstimate work_estimate = backend->estimate_works(program, rank);
  const double step_estimate = agreed_step_estimate(world, work_estimate, program);
  const double timeout_seconds = request.timeout_seconds.value_or(default_timeout_seconds(step_estimate));
  if (rank == 0)
    out << estimate_text(request, scenario, step_estimate, work_estimate.basis, timeout_seconds) << std::flush;
  const CommunicatorPlan plan = plan_communicators(program);
  const std::vector<TaskQueue> queues = task_queues(program, rank, true);
  backend->prepare(program, rank, plan, queues);
  std::optional<CheckpointFigures> resumed, written;
  if (!request.resume_dir.empty()) resumed = resume_checkpoint(world, request.resume_dir, scenario);

  RunStop stop(world, *backend, timeout_seconds, err);
  ExecutorOptions options;
  options.timeout_seconds = timeout_seconds;
  options.fault = request.fault;
  options.on_error = [&](const std::string& error) { stop.failed(error); };
  options.peer_stalled = [&] { return world.status_pending(); };
  options.on_stall = [&](const std::string& waiting_for) { stop.stalled(waiting_for); };
  backend->start();
  const RankRecord record = execute_rank(program, rank, *backend, queues, options);
  const long long checked = backend->checked_collectives();
  if (!request.checkpoint_dir.empty())
    written = write_live_checkpoint(world, request.checkpoint_dir, scenario, workload, program,
                                    resumed ? resumed->step + 1 : 1);

  const std::vector<std::vector<double>> gathered = world.gather(pack(record));
  const std::vector<std::vector<double>> checks = world.gather({double(checked)});
  if (rank != 0) return 0;
  const Timeline timeline = unpack(gathered, program, backend->device(), scenario.training.dtype);
  long long all_checked = 0;
  for (const auto& c : checks) all_checked += static_cast<long long>(c.front());
  print_report(out, scenario, workload, program, timeline, scaled.scaled, backend->device(), all_checked);
  if (resumed) out << "checkpoint verified    " << checkpoint_text(*resumed, "checkpoint.storage_read_GBps") << "\n";
  if (written) out << "checkpoint written     " << checkpoint_text(*written, "checkpoint.storage_write_GBps") << "\n";
  const TraceOrigin origin{request.scenario, scaled.overrides};
  outputs.write({{"--trace", [&](std::ostream& o) { write_chrome_trace(o, program, timeline, origin); }}});
  if (outputs.wanted("--trace") && request.trace_path != "-") out << "wrote " << request.trace_path << "\n";
  return 0;
}

}  // namespace simtrain
