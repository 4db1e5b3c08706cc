// simtrain-profile: `simtrain profile` for a machine that has only the CUDA
// toolkit and nlohmann/json (built with -DSIMTRAIN_PROFILER_ONLY=ON).
#include <iostream>
#include <string>
#include <vector>

#include "sim/base/input_error.hpp"
#include "profiler.hpp"

namespace {

constexpr const char* kUsage =
    "usage: simtrain-profile <scenario.json | built-in name> --out <database.json> [--sweep] [--set key=value]...\n"
    "Times every kernel the scenario needs on GPU 0 and writes a kernel-profile database\n"
    "(e.g. --out kernels/profiles/H100-SXM.json); --sweep also times a standard grid of shapes.\n";

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_path, out_path;
  std::vector<std::string> overrides;
  simtrain::ProfileOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--sweep") {
      options.sweep = true;
    } else if (arg == "--out" && has_value) {
      out_path = argv[++i];
    } else if (arg == "--set" && has_value) {
      overrides.push_back(argv[++i]);
    } else if (!arg.starts_with("-") && scenario_path.empty()) {
      scenario_path = arg;
    } else {
      std::cerr << "simtrain-profile: unexpected argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (scenario_path.empty() || out_path.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  options.command_line = simtrain::command_line(argc, argv);
  options.progress = &std::cerr;
  try {
    simtrain::write_kernel_profile(simtrain::load_scenario(scenario_path, overrides), out_path, options);
  } catch (const simtrain::InputError& e) {
    std::cerr << "simtrain-profile: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "simtrain-profile: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
