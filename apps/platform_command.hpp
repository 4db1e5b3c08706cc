#pragma once
// `simtrain export-platform --topology NAME --num-gpus N OUT.xml [--force]`:
// a topology written as a SimGrid platform file
// (sim/network/platform_export.hpp), for a user to start a platform of their
// own from. An existing OUT is replaced only with --force.
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/base/force_flag.hpp"

namespace simtrain {

class PlatformCommand {
public:
  explicit PlatformCommand(CLI::App& app);  // adds the subcommand
  bool parsed() const { return command_->parsed(); }
  // Throws InputError for bad input, OutputError where the file cannot be written.
  void run(std::ostream& out) const;

private:
  CLI::App* command_;
  std::string topology_, out_path_;
  int num_gpus_ = 0;
  ForceFlag force_;
};

}  // namespace simtrain
