// profile_kernels for a build without nvcc: there are no kernels to time.
#include <stdexcept>

#include "profiler.hpp"

namespace simtrain {

nlohmann::json profile_kernels(const std::vector<Scenario>&, const ProfileOptions&) {
  throw std::runtime_error(
      "this simtrain was built without the CUDA kernels (no nvcc when CMake ran); configure again where the CUDA "
      "toolkit is installed (SIMTRAIN_BUILD_KERNELS=ON), or build simtrain-profile alone with "
      "-DSIMTRAIN_PROFILER_ONLY=ON");
}

}  // namespace simtrain
