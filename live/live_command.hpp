#pragma once
// `simtrain live` (run the scenario's step for real, under mpirun or srun)
// and `simtrain compare` (a simulated trace against a live one), for the
// simtrain CLI and for simtrain-live, which builds without SimGrid.
#include <ostream>

#include <CLI/CLI.hpp>

#include "live_run.hpp"
#include "sim/base/force_flag.hpp"

namespace simtrain {

class LiveCommands {
public:
  explicit LiveCommands(CLI::App& app);
  bool parsed() const { return live_->parsed() || compare_->parsed(); }
  // Runs the parsed command and returns its exit code: 2 for bad input
  // (naming the file, field or flag), 1 for a failed run, 3 for a stalled one.
  // `command_line` is recorded in a calibration database.
  int run(const std::string& command_line, std::ostream& out, std::ostream& err);

private:
  int run_live_command(std::ostream& out, std::ostream& err);
  void run_compare(const std::string& command_line, std::ostream& out, std::ostream& err);

  CLI::App* live_;
  CLI::App* compare_;
  LiveRequest request_;
  std::string fault_;
  std::string simulated_trace_, live_trace_, calibration_path_, comparison_json_;
  ForceFlag live_force_, compare_force_;
};

}  // namespace simtrain
