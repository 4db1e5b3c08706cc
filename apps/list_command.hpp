#pragma once
// `simtrain list [--json]`: the built-in GPUs (a line each: peaks, memory,
// bandwidth), topologies (kind, GPUs per node, links) and scenarios (their
// cluster); with --json, every figure, each GPU as a scenario's inline
// cluster.gpu takes it and each topology as its file, so either can be copied
// and edited.
#include <ostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace simtrain {

class ListCommand {
public:
  explicit ListCommand(CLI::App& app);  // adds the subcommand
  bool parsed() const { return command_->parsed(); }
  void run(std::ostream& out) const;

private:
  CLI::App* command_;
  bool json_ = false;
};

// What `list --json` prints: {"gpus": [...], "topologies": [...], "scenarios": [...]}.
nlohmann::ordered_json builtins_json();

}  // namespace simtrain
