#pragma once
// `simtrain export-chakra SCENARIO OUT_PREFIX [--set key=value]...`: the
// scenario's Program as Chakra execution traces for ASTRA-sim
// (sim/chakra/chakra_export.hpp), compute durations from the scenario's cost
// model. Existing files are replaced only with --force.
// `simtrain check-chakra PREFIX`: traces replayed under ASTRA-sim's execution
// rules (sim/chakra/replay_check.hpp); exit 2, naming the ranks and nodes
// waiting on each other, where ASTRA-sim would deadlock.
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "scenario_arguments.hpp"
#include "sim/base/force_flag.hpp"

namespace simtrain {

class ChakraCommand {
public:
  explicit ChakraCommand(CLI::App& app);  // adds the subcommand
  bool parsed() const { return command_->parsed() || check_->parsed(); }
  // Throws InputError for bad input, OutputError where a file cannot be written.
  // Progress goes to `err` (on a terminal, without --quiet).
  void run(std::ostream& out, std::ostream& err) const;

private:
  CLI::App* command_;
  CLI::App* check_;
  std::string check_prefix_;
  ScenarioArguments scenario_;
  std::string prefix_;
  bool quiet_ = false;
  ForceFlag force_;
};

}  // namespace simtrain
