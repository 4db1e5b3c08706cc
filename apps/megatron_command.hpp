#pragma once
// `simtrain from-megatron "<pretrain_gpt.py arguments>" --gpu G --topology T
// --num-gpus N [--out scenario.json [--force]]`: a scenario from a Megatron-LM launch
// line (sim/scenario/megatron_arguments.hpp), checked by loading it, written
// under the output policy. Ignored flags and assumptions are printed; flags
// not simulated refuse the conversion (exit 2) unless --ignore-unknown.
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/base/force_flag.hpp"

namespace simtrain {

class MegatronCommand {
public:
  explicit MegatronCommand(CLI::App& app);  // adds the subcommand
  bool parsed() const { return command_->parsed(); }
  // Throws InputError for bad input.
  void run(std::ostream& out, std::ostream& err) const;

private:
  CLI::App* command_;
  std::vector<std::string> arguments_;
  std::string gpu_, topology_, out_path_ = "-";
  int64_t num_gpus_ = 0;
  bool ignore_unknown_ = false;
  ForceFlag force_;
};

}  // namespace simtrain
