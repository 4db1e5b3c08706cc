#include "chakra_command.hpp"

#include "progress_line.hpp"
#include "sim/base/text_format.hpp"
#include "sim/chakra/chakra_export.hpp"
#include "sim/chakra/replay_check.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/program_builder.hpp"

namespace simtrain {

ChakraCommand::ChakraCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "export-chakra", "write the scenario's step as Chakra execution traces for ASTRA-sim: OUT_PREFIX.<rank>.et, "
                       "OUT_PREFIX.comm_groups.json");
  scenario_.add_to(*command_, false);
  command_->add_option("out_prefix", prefix_, "path prefix of the files, e.g. traces/gpt3 (its folder must exist)")
      ->required();
  force_.add_to(*command_);
  command_->add_flag("--quiet", quiet_, "no progress line");
  check_ = app.add_subcommand("check-chakra", "replay Chakra traces PREFIX.<rank>.et under ASTRA-sim's execution rules "
                                              "(one communication node in flight per rank) and report a deadlock");
  check_->add_option("prefix", check_prefix_, "path prefix of the traces, e.g. traces/gpt3")->required();
}

void ChakraCommand::run(std::ostream& out, std::ostream& err) const {
  if (check_->parsed()) {
    const ReplayCheck check = check_chakra_replay(check_prefix_);
    out << "no deadlock: " << with_commas(double(check.nodes)) << " nodes of " << check.ranks
        << " ranks ran to the end under ASTRA-sim's rules (one communication node in flight per rank)\n";
    return;
  }
  const Scenario scenario = scenario_.load();
  ProgressLine progress(err, progress_wanted(quiet_));
  progress.show("export-chakra: building the Program");
  const Program program = build_program(scenario, build_workload(scenario));
  const std::vector<double> seconds = work_durations(program, *make_cost_model(scenario), scenario.training.dtype);
  progress.show("export-chakra: ordering the communication");
  double writing_from = -1;
  const ChakraExport written =
      export_chakra(program, seconds, prefix_, "OUT_PREFIX", force_.existing_files(), [&](int ranks_written) {
        if (writing_from < 0) writing_from = progress.elapsed_seconds();
        progress.show(ranks_written_text("export-chakra", ranks_written, program.world_size,
                                         progress.elapsed_seconds(), progress.elapsed_seconds() - writing_from));
      });
  progress.clear();
  out << "wrote " << written.files.size() - 1 << " Chakra traces (" << with_commas(double(written.nodes))
      << " nodes) " << prefix_ << ".{0.." << program.world_size - 1 << "}.et and " << written.files.back() << "\n"
      << "ASTRA-sim: --workload-configuration=" << prefix_ << " --comm-group-configuration=" << written.files.back()
      << "\n";
}

}  // namespace simtrain
