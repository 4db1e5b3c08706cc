#include "blas_setup.hpp"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace simtrain::host {

void set_threads(int threads) { openblas_set_num_threads(std::max(threads, 1)); }

namespace {

// OpenBLAS's kernels for this CPU's widest vector units where it runs others; "" where it runs those.
std::string fitting_core() {
  const std::string core = openblas_get_corename();
  auto one_of = [&](const std::vector<std::string>& cores) {
    return std::find(cores.begin(), cores.end(), core) != cores.end();
  };
  const std::vector<std::string> avx512 = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  std::string wanted;
  if (__builtin_cpu_supports("avx512f") && !one_of(avx512))
    wanted = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && !one_of(avx512) && !one_of({"Haswell", "Zen"}))
    wanted = "Haswell";
  return wanted;
}

}  // namespace

std::string kernel_advice() {
  const std::string wanted = fitting_core(), core = openblas_get_corename();
  if (wanted.empty()) return "";
  return "OpenBLAS runs its " + core + " kernels on this CPU, which has " +
         (wanted == "SkylakeX" ? "AVX-512" : "AVX2") + ": OPENBLAS_CORETYPE=" + wanted +
         " in every rank's environment (mpirun -x OPENBLAS_CORETYPE=" + wanted + ") runs GEMMs several times faster";
}

void restart_with_fitting_kernels(char* const* argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user's choice, or this very restart
  const std::string wanted = fitting_core();
  if (wanted.empty()) return;
  ::setenv("OPENBLAS_CORETYPE", wanted.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OPENBLAS_CORETYPE");  // exec failed: carry on with the kernels OpenBLAS chose
}

}  // namespace simtrain::host
