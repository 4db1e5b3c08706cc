#pragma once
// `simtrain export-chakra SCENARIO OUT_PREFIX [--set key=value]...`: the
// scenario's Program as Chakra execution traces for ASTRA-sim
// (sim/chakra/chakra_export.hpp), compute durations from the scenario's cost
// model.
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "scenario_arguments.hpp"

namespace simtrain {

class ChakraCommand {
public:
  explicit ChakraCommand(CLI::App& app);  // adds the subcommand
  bool parsed() const { return command_->parsed(); }
  // Throws InputError for bad input, OutputError where a file cannot be written.
  void run(std::ostream& out) const;

private:
  CLI::App* command_;
  ScenarioArguments scenario_;
  std::string prefix_;
};

}  // namespace simtrain
