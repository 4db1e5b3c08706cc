#pragma once
// The scenario a subcommand runs: a file or a built-in name, and --set overrides.
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct ScenarioArguments {
  std::string path;
  std::vector<std::string> overrides;

  void add_to(CLI::App& command, bool optional) {
    auto* option = command.add_option("scenario", path,
                                      "scenario JSON file, or the name of a built-in scenario" +
                                          std::string(optional ? " (default: " + std::string(default_scenario_name()) + ")" : ""));
    if (!optional) option->required();
    command.add_option("--set", overrides, "override a scenario field: key=value (repeatable)")
        ->type_name("KEY=VALUE")
        ->allow_extra_args(false);  // one value per --set, so a scenario after it stays the scenario
  }
  Scenario load() const { return load_scenario(path.empty() ? default_scenario_name() : path, overrides); }
  // Where the paths a scenario file names are relative to (as load_scenario resolves them).
  std::string base_dir() const {
    std::error_code error;
    if (!std::filesystem::exists(path, error)) return ".";
    const std::string dir = std::filesystem::path(path).parent_path().string();
    return dir.empty() ? "." : dir;
  }
};

}  // namespace simtrain
