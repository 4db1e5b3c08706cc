#include "live_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "atomic_file.hpp"
#include "backend_factory.hpp"
#include "rank_checkpoint.hpp"
#include "communicator_plan.hpp"
#include "input_error.hpp"
#include "program_builder.hpp"
#include "report.hpp"
#include "text_format.hpp"
#include "trace.hpp"
#include "workload.hpp"

namespace simtrain {

namespace {

// The scenario as requested, then scaled down by --layers / --micro-batches.
struct ScaledScenario {
  Scenario scenario;
  std::vector<std::string> scaled;  // "layers 96 -> 4", for the report
};

ScaledScenario load_scaled(const LiveRequest& request) {
  const Scenario original = load_scenario(request.scenario, request.overrides);
  std::vector<std::string> overrides = request.overrides;
  ScaledScenario result;
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
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds < 1 ? "%.2f ms" : "%.3f s", seconds < 1 ? seconds * 1e3 : seconds);
  return text;
}

// Refused on every rank when one lacks the memory, before anything is allocated.
void check_memory(ProcessWorld& world, const Backend& backend, const Program& program) {
  const double needed = backend.bytes_needed(program, world.rank());
  const double available = backend.bytes_available();
  const std::string error = needed <= available ? ""
                                                : "needs " + format_bytes(needed) + " for its kernels and buffers, " +
                                                      format_bytes(available) + " are free";
  if (const std::string errors = agree_on_errors(world, error); !errors.empty())
    throw AgreedLiveError("out of memory before launching anything: " + errors +
                    ". Scale it down: --layers, --micro-batches, or --set seq_length=... / hidden_size=...");
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
  add_line(text, "transfers checked", with_commas(kinds[TaskKind::RECV].first) + ", all correct");
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
}

}  // namespace

int run_live(const LiveRequest& request, ProcessWorld& world, std::ostream& out, std::ostream& err) {
  const ScaledScenario scaled = load_scaled(request);
  const Scenario& scenario = scaled.scenario;
  const Workload workload = build_workload(scenario);
  const Program program = build_program(scenario, workload);
  check_runnable(program, scenario, world.size());
  const int rank = world.rank();
  if (request.fault && (request.fault->rank < 0 || request.fault->rank >= program.world_size ||
                        request.fault->task < 0 || request.fault->task >= int(program.tasks.size()) ||
                        program.tasks[request.fault->task].rank != request.fault->rank))
    throw InputError("--inject-fault", "", "task " + std::to_string(request.fault->task) + " is not a task of rank " +
                                               std::to_string(request.fault->rank));

  std::unique_ptr<Backend> backend = make_backend(request.backend, world, scenario);
  check_memory(world, *backend, program);
  const CommunicatorPlan plan = plan_communicators(program);
  const std::vector<TaskQueue> queues = task_queues(program, rank);
  backend->prepare(program, rank, plan, queues);
  std::optional<CheckpointFigures> resumed, written;
  if (!request.resume_dir.empty()) resumed = resume_checkpoint(world, request.resume_dir, scenario);

  ExecutorOptions options;
  options.timeout_seconds = request.timeout_seconds;
  options.fault = request.fault;
  options.on_error = [&](const std::string& error) {
    err << "simtrain live: rank " << rank << ": " << error << "\n" << std::flush;
    abort_after_output(world, 1, 1);
  };
  options.peer_stalled = [&] { return world.status_pending(); };
  options.on_stall = [&](const std::string& waiting_for) {
    // Every rank still running joins within a watchdog tick of the first
    // (status_pending), so the ranks that do not answer are dead or hung.
    const std::string status = "rank " + std::to_string(rank) + ": " + waiting_for;
    const std::map<int, std::string> statuses = world.exchange_status(status, request.timeout_seconds);
    const bool reporter = statuses.begin()->first == rank;  // the lowest rank answering says it for all
    if (reporter) {
      std::string silent;
      for (int r = 0; r < world.size(); ++r)
        if (!statuses.count(r)) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
      err << "simtrain live: no task completed for " << request.timeout_seconds << " s; "
          << (silent.empty() ? "every rank answered" : "rank " + silent + " did not answer (dead or hung)") << "\n";
      for (const auto& [r, text] : statuses) err << "  " << text << "\n";
      err << std::flush;
    }
    abort_communication(*backend);
    abort_after_output(world, 3, reporter ? 1 : 3);
  };
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
  if (!request.trace_path.empty()) {
    write_file_atomically(request.trace_path, [&](std::ostream& o) { write_chrome_trace(o, program, timeline); });
    out << "wrote " << request.trace_path << "\n";
  }
  return 0;
}

}  // namespace simtrain
