#include "blas_setup.hpp"

#include <cblas.h>

#include <algorithm>
#include <vector>

namespace simtrain::host {

void set_threads(int threads) { openblas_set_num_threads(std::max(threads, 1)); }

std::string kernel_advice() {
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
  if (wanted.empty()) return "";
  return "OpenBLAS runs its " + core + " kernels on this CPU, which has " +
         (wanted == "SkylakeX" ? "AVX-512" : "AVX2") + ": OPENBLAS_CORETYPE=" + wanted +
         " in every rank's environment (mpirun -x OPENBLAS_CORETYPE=" + wanted + ") runs GEMMs several times faster";
}

}  // namespace simtrain::host
