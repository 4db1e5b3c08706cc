#pragma once
// `simtrain search`: its options, and running it (spread over MPI ranks when
// started by mpirun and built with MPI).
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "scenario_arguments.hpp"
#include "sim/base/force_flag.hpp"

namespace simtrain {

class SearchCommand {
public:
  explicit SearchCommand(CLI::App& app);  // adds the subcommand
  bool parsed() const { return command_->parsed(); }
  // Throws InputError for bad input, Interrupted on Ctrl-C.
  void run(std::ostream& out, std::ostream& err) const;

private:
  CLI::App* command_;
  ScenarioArguments scenario_;
  std::vector<std::string> gpu_counts_, gpu_types_, prices_, varied_;  // as given (--gpus, --gpu-types: comma-separated)
  std::string objective_ = "time", csv_path_, json_path_, svg_path_;
  int top_ = 10, jobs_ = 0, round_size_ = 16;
  double tie_percent_ = 1;
  bool fabric_follows_gpu_ = false;
  bool quiet_ = false;
  ForceFlag force_;
};

}  // namespace simtrain
