#pragma once
// The scenario a subcommand runs: a file or a built-in name, and --set overrides.
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/base/embedded_files.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// load_scenario, where a name that is neither a file nor a built-in scenario
// is refused naming the built-in ones close to it ("did you mean ...?").
inline Scenario load_named_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  try {
    return load_scenario(path, overrides);
  } catch (const InputError& error) {
    if (error.file() != path || error.reason() != "no such file") throw;
    std::vector<std::string> names;
    for (const EmbeddedFile& file : embedded_scenarios()) names.emplace_back(file.name);
    std::string close;
    const std::string stem = std::filesystem::path(path).stem().string();  // "scenarios/gpt3.json": gpt3
    for (const std::string& name : close_names(stem, names)) close += (close.empty() ? "" : ", ") + name;
    throw InputError(path, "", "no such file, nor a built-in scenario" +
                                   (close.empty() ? std::string(" (simtrain list names them)") : "; did you mean " + close + "?"));
  }
}

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
  Scenario load() const { return load_named_scenario(path.empty() ? default_scenario_name() : path, overrides); }
  // Where the paths a scenario file names are relative to (as load_scenario resolves them).
  std::string base_dir() const {
    std::error_code error;
    if (!std::filesystem::exists(path, error)) return ".";
    const std::string dir = std::filesystem::path(path).parent_path().string();
    return dir.empty() ? "." : dir;
  }
};

}  // namespace simtrain
