#include "live_command.hpp"

#include "backend.hpp"
#include "calibration.hpp"
#include "process_world.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/option_checks.hpp"
#include "sim/base/output_files.hpp"
#include "sim/program/trace_reader.hpp"
#include "step_estimate.hpp"
#include "trace_comparison.hpp"

namespace simtrain {

LiveCommands::LiveCommands(CLI::App& app) {
  live_ = app.add_subcommand("live", "run the scenario's step for real: mpirun -np N simtrain live <scenario>");
  live_->add_option("scenario", request_.scenario, "scenario JSON file, or the name of a built-in scenario")->required();
  live_->add_option("--set", request_.overrides, "override a scenario field: key=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  live_->add_option("--backend", request_.backend, "host: MPI and CPU kernels; cuda: NCCL and CUDA kernels")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  live_->add_option("--layers", request_.layers, "scale down: run with this many layers")->check(more_than(0));
  live_->add_option("--micro-batches", request_.micro_batches, "scale down: micro-batches per pipeline per step")
      ->check(more_than(0));
  live_->add_option("--trace", request_.trace_path,
                    "write the measured step as a Chrome trace (rank 0), gzip-compressed if it ends in .gz");
  live_->add_option("--checkpoint", request_.checkpoint_dir, "after the step, write every rank's shard of state here");
  live_->add_option("--resume", request_.resume_dir, "before the step, verify the checkpoint in this directory");
  live_->add_option("--timeout", request_.timeout_seconds,
                    "seconds without a completed task before the run stops (default: " + default_timeout_rule() + ")")
      ->check(more_than(0));
  live_->add_option("--inject-fault", fault_, "test the fault handling: kill:RANK:TASK, hang:RANK:TASK or fail:RANK:TASK");
  live_force_.add_to(*live_);

  compare_ = app.add_subcommand("compare", "compare a simulated trace with a live one, task by task");
  compare_->add_option("simulated", simulated_trace_, "trace of `simtrain simulate --trace`")->required();
  compare_->add_option("live", live_trace_, "trace of `simtrain live --trace`")->required();
  compare_->add_option("--json", comparison_json_, "write the comparison as JSON");
  compare_->add_option("--calibrate", calibration_path_,
                       "write the live run's measured kernel times as a kernel-profile database");
  compare_force_.add_to(*compare_);
}

int LiveCommands::run(const std::string& command_line, std::ostream& out, std::ostream& err) {
  try {
    if (live_->parsed()) return run_live_command(out, err);
    run_compare(command_line, out, err);
    return 0;
  } catch (const InputError& e) {
    err << "simtrain: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "simtrain: error: " << e.what() << "\n";
    return 1;
  }
}

int LiveCommands::run_live_command(std::ostream& out, std::ostream& err) {
  // A bad flag is the same on every rank: the launcher's rank 0 says it, before MPI starts.
  try {
    if (!fault_.empty()) request_.fault = parse_injected_fault(fault_, "--inject-fault");
  } catch (const InputError&) {
    if (launcher_rank() != 0) return kQuietRankExitCode;
    throw;
  }
  request_.existing_files = live_force_.existing_files();
  const std::unique_ptr<ProcessWorld> world = join_process_world(nullptr, nullptr);
  // Bad input is refused by every rank alike, and agreed failures are thrown
  // by all: rank 0 says it once.
  try {
    return run_live(request_, *world, out, err);
  } catch (const InputError&) {
    if (world->rank() != 0) return kQuietRankExitCode;
    throw;
  } catch (const AgreedLiveError&) {
    if (world->rank() != 0) return kQuietRankExitCode;
    throw;
  }
}

void LiveCommands::run_compare(const std::string& command_line, std::ostream& out, std::ostream& err) {
  OutputFiles outputs(out, compare_force_.existing_files());
  outputs.add("--json", comparison_json_);
  outputs.add("--calibrate", calibration_path_);
  outputs.refuse_inputs({simulated_trace_, live_trace_});
  const RecordedStep simulated = read_chrome_trace_file(simulated_trace_);
  const RecordedStep live = read_chrome_trace_file(live_trace_);
  check_comparable(simulated, live);
  const TraceComparison comparison = compare_traces(simulated, live);
  std::ostream& text = outputs.writes_standard_output() ? err : out;
  text << to_text(comparison);
  outputs.write({{"--json", [&](std::ostream& o) { o << to_json(comparison).dump(2) << "\n"; }},
                 {"--calibrate", [&](std::ostream& o) {
                    o << calibration_document(calibration_database(live), command_line).dump(2) << "\n";
                  }}});
  if (outputs.wanted("--calibrate") && calibration_path_ != "-") text << "wrote " << calibration_path_ << "\n";
}

}  // namespace simtrain
