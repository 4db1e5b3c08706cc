// simtrain-live: `simtrain live` and `simtrain compare` for a machine with
// only the CUDA toolkit, MPI and header-only libraries (no SimGrid).
#include <iostream>

#include <CLI/CLI.hpp>

#include "live_command.hpp"
#include "profiler.hpp"

int main(int argc, char** argv) {
  CLI::App app{"simtrain-live: run a training step for real and compare it with the simulation"};
  app.require_subcommand(1);
  simtrain::LiveCommands commands(app);
  CLI11_PARSE(app, argc, argv);
  return commands.run(simtrain::command_line(argc, argv), std::cout, std::cerr);
}
