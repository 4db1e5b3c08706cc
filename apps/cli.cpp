#include "cli.hpp"

#include <optional>

#include <CLI/CLI.hpp>

#include "chakra_command.hpp"
#include "chakra_simulation.hpp"
#include "list_command.hpp"
#include "live_command.hpp"
#include "megatron_command.hpp"
#include "platform_command.hpp"
#include "process_world.hpp"
#include "profile_plan.hpp"
#include "profiler.hpp"
#include "progress_line.hpp"
#include "scenario_arguments.hpp"
#include "search_command.hpp"
#include "sim/base/force_flag.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/interrupt_guard.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/option_checks.hpp"
#include "sim/base/output_files.hpp"
#include "version.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/longrun/train.hpp"
#include "sim/program/pipeline_grid.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/trace.hpp"
#include "sim/scenario/fabric_match.hpp"

namespace simtrain {

namespace {

// A GPU on a system built for another keeps that system's NVLink: said before its figures.
void warn_of_fabric_mismatch(const Scenario& scenario, std::ostream& err) {
  if (const std::string mismatch = fabric_mismatch(scenario.cluster.gpu.name, scenario.cluster.topology);
      !mismatch.empty())
    err << "simtrain: warning: " << mismatch << "\n";
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"simtrain: simulate LLM training steps on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text(), "print simtrain's version and exit");

  auto* simulate_command = app.add_subcommand("simulate", "simulate one training step and print the report");
  ScenarioArguments simulate_args;
  simulate_args.add_to(*simulate_command, true);
  std::string trace_path, report_path, algorithm = "auto", trace_ranks_text = "representatives";
  bool free_communication = false, free_launches = false, full_replay = false, flow_level = false, quiet = false;
  auto* trace_option = simulate_command->add_option(
      "--trace", trace_path,
      "write a Chrome trace (Perfetto, chrome://tracing), gzip-compressed if it ends in .gz; - for standard output");
  simulate_command
      ->add_option("--trace-ranks", trace_ranks_text,
                   "ranks the trace shows: representatives (those simulated; every rank unless the replay was "
                   "symmetry-reduced), all, stage:P,P... (pipeline ranks) or rank:R,R...")
      ->needs(trace_option);
  simulate_command->add_option("--report", report_path, "write the report as JSON; - for standard output");
  simulate_command->add_option("--allreduce-algorithm", algorithm, "NCCL all-reduce algorithm")
      ->check(CLI::IsMember({"auto", "ring", "tree"}));
  simulate_command->add_flag("--free-communication", free_communication,
                             "communication takes no time (to see compute and bubbles alone)");
  simulate_command->add_flag("--free-launches", free_launches,
                             "the hosts launch kernels at no cost (what CUDA graphs over the whole step come near)");
  simulate_command->add_flag("--full-replay", full_replay,
                             "simulate every data-parallel replica, not one per class of equivalent ones (slower; "
                             "for checking the reduction)");
  simulate_command->add_flag("--flow-level", flow_level,
                             "send every collective's flows, none timed in closed form (slower; for checking the "
                             "closed forms)");
  simulate_command->add_flag("--quiet", quiet, "no progress line");
  bool sensitivity = false, no_sensitivity = false;
  auto* sensitivity_flag = simulate_command->add_flag(
      "--sensitivity", sensitivity,
      "also replay the step with compute 10 % slower and with the network 2x slower, whatever the Program's size "
      "(default: for Programs of up to 4,000,000 tasks whose replay sends up to 2,000,000 flows)");
  simulate_command->add_flag("--no-sensitivity", no_sensitivity, "no sensitivity replays")->excludes(sensitivity_flag);
  std::string chakra_prefix, chakra_topology, chakra_gpu;
  auto* chakra_option = simulate_command->add_option(
      "--chakra", chakra_prefix,
      "replay Chakra execution traces instead of a scenario: PREFIX.<rank>.et (and PREFIX.comm_groups.json), "
      "compute as recorded, on --topology's network");
  auto* topology_option = simulate_command->add_option(
      "--topology", chakra_topology, "with --chakra: the network, a built-in topology (simtrain list) or a topology file");
  auto* gpu_option = simulate_command->add_option("--gpu", chakra_gpu, "with --chakra: the GPU, a built-in name (simtrain list)");
  chakra_option->needs(topology_option)
      ->needs(gpu_option)
      ->excludes(simulate_command->get_option("scenario"))
      ->excludes(simulate_command->get_option("--set"))
      ->excludes(sensitivity_flag);
  topology_option->needs(chakra_option);
  gpu_option->needs(chakra_option);

  auto* schedule_command = app.add_subcommand(
      "schedule", "print the Program (per-rank task list) as JSON, or the pipeline's step grid (--grid)");
  ScenarioArguments schedule_args;
  schedule_args.add_to(*schedule_command, false);
  std::string schedule_path = "-";
  bool schedule_grid = false;
  schedule_command->add_option("--out", schedule_path, "file to write (default: - for standard output)");
  schedule_command->add_flag("--grid", schedule_grid,
                             "print the pipeline's step x pipeline-rank grid of compute actions instead (text)");
  bool schedule_quiet = false;
  schedule_command->add_flag("--quiet", schedule_quiet, "no progress line");

  auto* profile_command = app.add_subcommand(
      "profile", "time the scenario's kernels on this machine's GPU and write a kernel-profile database");
  ScenarioArguments profile_args;
  profile_args.add_to(*profile_command, false);
  std::string profile_path;
  ProfileOptions profile_options;
  auto* profile_out = profile_command->add_option("--out", profile_path, "database to write, e.g. kernels/profiles/H100-SXM.json");
  profile_command->add_flag("--sweep", profile_options.sweep,
                            "also time a standard grid of shapes, so that the database serves other scenarios");
  bool profile_list = false;
  profile_command->add_flag("--list", profile_list, "print the kernels it would time and stop (no GPU needed)")
      ->excludes(profile_out);
  std::vector<std::string> profile_also;
  profile_command->add_option("--also", profile_also,
                              "time this scenario's kernels too, into the same database (repeatable; --set applies to each)")
      ->type_name("SCENARIO")
      ->allow_extra_args(false);

  auto* train_command = app.add_subcommand("train", "simulate a whole training run with failures, checkpoints and restarts");
  ScenarioArguments train_args;
  train_args.add_to(*train_command, false);
  TrainRequest train_request;
  std::string run_trace_path, run_report_path;
  auto* tokens_option = train_command->add_option("--tokens", train_request.tokens, "tokens to train")->check(more_than(0));
  auto* steps_option = train_command->add_option("--steps", train_request.steps, "steps to train")->check(at_least(1));
  train_command->add_option("--days", train_request.days,
                            "days of wall time the job has; alone, it trains all the steps that fit")
      ->check(more_than(0))
      ->excludes(tokens_option)
      ->excludes(steps_option);
  tokens_option->excludes(steps_option);
  train_command
      ->add_option("--runs", train_request.runs,
                   "runs with consecutive seeds, for the mean and percentiles (default: " + std::to_string(default_runs) +
                       ", fewer if so many cannot be simulated; 1 where nothing fails)")
      ->check(between(1, 100000));
  train_command->add_flag("--no-failures", train_request.no_failures,
                          "nothing fails (the ideal run); without it, a scenario that states no failure rates fails at "
                          "those measured while Llama 3 405B trained");
  train_command->add_flag("--ignore-memory", train_request.ignore_memory,
                          "price the job even if it does not fit in its GPUs' memory");
  train_command->add_flag("--checkpoint-policies", train_request.checkpoint_policies,
                          "also rank checkpoint policies (mode x interval x tiers) by goodput and cost");
  train_command->add_option("--trace", run_trace_path,
                            "write the first run's timeline as a Chrome trace (.gz: compressed); - for standard output");
  train_command->add_option("--report", run_report_path, "write the figures as JSON; - for standard output");
  bool train_quiet = false;
  train_command->add_flag("--quiet", train_quiet, "no progress line");

  // The one overwrite rule: each of these commands replaces an existing output file only with its --force.
  ForceFlag force;
  for (CLI::App* writer : {simulate_command, schedule_command, profile_command, train_command}) force.add_to(*writer);

  SearchCommand search_command(app);
  LiveCommands live_commands(app);
  MegatronCommand megatron_command(app);
  ChakraCommand chakra_command(app);
  PlatformCommand platform_command(app);
  ListCommand list_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();  // the subcommand's help, when one was named
    return 0;
  } catch (const CLI::ParseError& e) {
    if (launcher_rank() != 0) return kQuietRankExitCode;  // under mpirun, rank 0 says it once
    if (e.get_exit_code() == 0) return app.exit(e, out, err);
    err << "simtrain: " << e.what() << "\n";
    return 2;
  }

  if (live_commands.parsed()) return live_commands.run(command_line(argc, argv), out, err);
  const InterruptGuard interrupt_guard;
  OutputFiles outputs(out, force.existing_files());
  try {
    if (simulate_command->parsed()) {
      outputs.add("--trace", trace_path);
      outputs.add("--report", report_path);
      const TraceRanks trace_ranks = parse_trace_ranks(trace_ranks_text);
      ReplayOptions options;
      options.free_communication = free_communication;
      options.free_launches = free_launches;
      options.full_replay = full_replay;
      options.flow_level = flow_level;
      options.allreduce_algorithm = parse_allreduce_algorithm(algorithm);
      ProgressLine progress(err, progress_wanted(quiet));
      show_simulation_progress(options, progress);
      const SensitivityReplays replays = sensitivity      ? SensitivityReplays::always
                                         : no_sensitivity ? SensitivityReplays::none
                                                          : SensitivityReplays::automatic;
      // What was simulated: a scenario, or Chakra traces.
      std::optional<Simulation> sim;
      std::optional<ChakraSimulation> replayed;
      if (chakra_option->count() > 0) {
        const Topology topology = topology_from_json(chakra_topology, "--topology", "", ".");
        const GpuSpec gpu = gpu_from_json(chakra_gpu, "--gpu", "");
        ChakraTraces traces = import_chakra(chakra_prefix);
        outputs.refuse_inputs(traces.files);
        check_trace_ranks(trace_ranks, traces.program.world_size, traces.program.pipeline_size);
        replayed = simulate_chakra(std::move(traces), chakra_prefix, topology, gpu, options);
      } else {
        const Scenario scenario = simulate_args.load();
        outputs.refuse_inputs(scenario.files_read);
        check_trace_ranks(trace_ranks, static_cast<int>(scenario.parallel.world_size()), scenario.parallel.pipeline);
        warn_of_fabric_mismatch(scenario, err);
        sim = simulate(scenario, options, replays);
      }
      const Program& program = sim ? sim->program : replayed->traces.program;
      const Timeline& timeline = sim ? sim->timeline : replayed->timeline;
      const StepReport& report = sim ? sim->report : replayed->report;
      progress.clear();
      (outputs.writes_standard_output() ? err : out) << to_text(report);
      const TraceOrigin origin{replayed                    ? chakra_prefix
                               : simulate_args.path.empty() ? std::string(default_scenario_name())
                                                            : simulate_args.path,
                               simulate_args.overrides};
      outputs.write({{"--trace", [&](std::ostream& o) { write_chrome_trace(o, program, timeline, origin, trace_ranks); }},
                     {"--report", [&](std::ostream& o) { o << to_json(report).dump(2) << "\n"; }}});
    } else if (train_command->parsed()) {
      outputs.add("--trace", run_trace_path);
      outputs.add("--report", run_report_path);
      const Scenario scenario = train_args.load();
      outputs.refuse_inputs(scenario.files_read);
      warn_of_fabric_mismatch(scenario, err);
      ProgressLine progress(err, progress_wanted(train_quiet));  // cleared also when the runs fail
      show_simulation_progress(train_request.replay, progress);
      std::optional<double> runs_began_seconds;
      if (progress.wanted())
        train_request.on_progress = [&](const TrainProgress& p) {
          if (!runs_began_seconds) runs_began_seconds = progress.elapsed_seconds();
          progress.show(
              train_progress_text(p, progress.elapsed_seconds(), progress.elapsed_seconds() - *runs_began_seconds));
        };
      const TrainPlan plan = plan_training(scenario, train_request);
      progress.clear();
      (outputs.writes_standard_output() ? err : out) << to_text(plan);
      outputs.write({{"--trace", [&](std::ostream& o) { write_run_trace(o, plan.runs.front()); }},
                     {"--report", [&](std::ostream& o) { o << to_json(plan).dump(2) << "\n"; }}});
    } else if (search_command.parsed()) {
      search_command.run(out, err);
    } else if (chakra_command.parsed()) {
      chakra_command.run(out, err);
    } else if (platform_command.parsed()) {
      platform_command.run(out);
    } else if (megatron_command.parsed()) {
      megatron_command.run(out, err);
    } else if (schedule_command->parsed()) {
      outputs.add("--out", schedule_path);
      const Scenario scenario = schedule_args.load();
      outputs.refuse_inputs(scenario.files_read);
      ProgressLine progress(err, progress_wanted(schedule_quiet));
      // The grid needs only the schedule, not the Program (millions of tasks on large clusters).
      outputs.write({{"--out", [&](std::ostream& o) {
                        if (schedule_grid) {
                          o << format_pipeline_grid(pipeline_stages(scenario), pipeline_schedule(scenario));
                          return;
                        }
                        progress.show("schedule: building the Program");
                        const Program program = build_program(scenario, build_workload(scenario));
                        const double writing_from = progress.elapsed_seconds();
                        write_json(o, program, [&](int ranks_written) {
                          progress.show(ranks_written_text("schedule", ranks_written, program.world_size,
                                                           progress.elapsed_seconds(),
                                                           progress.elapsed_seconds() - writing_from));
                        });
                        o << "\n";
                      }}});
    } else if (profile_command->parsed()) {
      profile_options.command_line = command_line(argc, argv);
      profile_options.progress = &err;
      profile_options.existing_files = force.existing_files();
      std::vector<Scenario> scenarios = {profile_args.load()};
      for (const std::string& path : profile_also) scenarios.push_back(load_named_scenario(path, profile_args.overrides));
      if (profile_list) {
        print_profile_plan(profile_plan(scenarios, profile_options.sweep), out);
      } else if (profile_path.empty()) {
        err << "simtrain profile: --out is required (or --list)\n";
        return 2;
      } else {
        write_kernel_profile(scenarios, profile_path, profile_options);
        if (profile_path != "-") out << "wrote " << profile_path << "\n";
      }
    } else {
      list_command.run(out);
    }
  } catch (const InputError& e) {
    err << "simtrain: " << e.what() << "\n";
    return 2;
  } catch (const Interrupted&) {
    err << "simtrain: interrupted; no output was written\n";
    return 130;
  } catch (const OutputError& e) {
    err << "simtrain: " << e.what() << "\n";
    return 1;
  } catch (const nlohmann::json::exception& e) {  // a field read without a check: its reason, not the library's code
    err << "simtrain: error: " << json_error_reason(e) << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "simtrain: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace simtrain
