#include <iostream>
#include <string>

#include "cli.hpp"
#include "host/blas_setup.hpp"

int main(int argc, char** argv) {
  // The host backend's GEMMs: OpenBLAS picks its kernels before main runs (kernels/host/blas_setup.hpp).
  if (argc > 1 && std::string(argv[1]) == "live") simtrain::host::restart_with_fitting_kernels(argv);
  return simtrain::run_cli(argc, argv, std::cout, std::cerr);
}
