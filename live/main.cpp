// simtrain-live: `simtrain live` and `simtrain compare` for a machine with
// only the CUDA toolkit, MPI and header-only libraries (no SimGrid).
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "host/blas_setup.hpp"
#include "live_command.hpp"
#include "process_world.hpp"
#include "profiler.hpp"

int main(int argc, char** argv) {
  // The host backend's GEMMs: OpenBLAS picks its kernels before main runs (kernels/host/blas_setup.hpp).
  if (argc > 1 && std::string(argv[1]) == "live") simtrain::host::restart_with_fitting_kernels(argv);
  CLI::App app{"simtrain-live: run a training step for real and compare it with the simulation"};
  app.require_subcommand(1);
  simtrain::LiveCommands commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Under mpirun every process has the same command line: the first one says what is wrong with it.
    if (simtrain::launcher_rank() != 0) return simtrain::kQuietRankExitCode;
    return app.exit(e) == 0 ? 0 : 2;
  }
  return commands.run(simtrain::command_line(argc, argv), std::cout, std::cerr);
}
