// simtrain-profile: `simtrain profile` for a machine that has only the CUDA
// toolkit and nlohmann/json (built with -DSIMTRAIN_PROFILER_ONLY=ON).
#include <iostream>
#include <string>
#include <vector>

#include "sim/base/input_error.hpp"
#include "profile_plan.hpp"
#include "profiler.hpp"

namespace {

constexpr const char* kUsage =
    "usage: simtrain-profile <scenario.json | built-in name>... (--out <database.json> [--force] | --list) [--sweep] [--set key=value]...\n"
    "Times every kernel the scenarios need on GPU 0 and writes one kernel-profile database\n"
    "(e.g. --out kernels/profiles/H100-SXM.json; an existing one is replaced only with --force);\n"
    "--sweep also times a standard grid of shapes;\n"
    "each --set applies to every scenario; --list prints the kernels it would time (no GPU needed).\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> scenario_paths;
  std::string out_path;
  bool list = false;
  std::vector<std::string> overrides;
  simtrain::ProfileOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--force") {
      options.existing_files = simtrain::ExistingFiles::replace;
    } else if (arg == "--sweep") {
      options.sweep = true;
    } else if (arg == "--out" && has_value) {
      out_path = argv[++i];
    } else if (arg == "--set" && has_value) {
      overrides.push_back(argv[++i]);
    } else if (!arg.starts_with("-")) {
      scenario_paths.push_back(arg);
    } else {
      std::cerr << "simtrain-profile: unexpected argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (scenario_paths.empty() || out_path.empty() == !list) {
    std::cerr << kUsage;
    return 2;
  }
  options.command_line = simtrain::command_line(argc, argv);
  options.progress = &std::cerr;
  try {
    std::vector<simtrain::Scenario> scenarios;
    for (const std::string& path : scenario_paths) scenarios.push_back(simtrain::load_scenario(path, overrides));
    if (list)
      simtrain::print_profile_plan(simtrain::profile_plan(scenarios, options.sweep), std::cout);
    else
      simtrain::write_kernel_profile(scenarios, out_path, options);
  } catch (const simtrain::InputError& e) {
    std::cerr << "simtrain-profile: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "simtrain-profile: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
