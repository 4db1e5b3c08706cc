#include "backend_factory.hpp"

#include "sim/base/input_error.hpp"
#ifdef SIMTRAIN_LIVE_HOST_BACKEND
#include "host_backend.hpp"
#endif
#ifdef SIMTRAIN_LIVE_CUDA_BACKEND
#include "cuda_backend.hpp"
#endif

namespace simtrain {

std::unique_ptr<Backend> make_backend(const std::string& name, ProcessWorld& world, const Scenario& scenario) {
  if (name == "host") {
#ifdef SIMTRAIN_LIVE_HOST_BACKEND
    return std::make_unique<HostBackend>(dynamic_cast<MpiWorld&>(world), scenario);
#else
    throw InputError("--backend", "", "host: this simtrain was built without MPI (install libopenmpi-dev and rebuild)");
#endif
  }
  if (name == "cuda") {
#ifdef SIMTRAIN_LIVE_CUDA_BACKEND
    return std::make_unique<CudaBackend>(world, scenario);
#else
    throw InputError("--backend", "", "cuda: this simtrain was built without CUDA and NCCL");
#endif
  }
  throw InputError("--backend", "", "'" + name + "' is neither host nor cuda");
}

void abort_communication([[maybe_unused]] Backend& backend) {
#ifdef SIMTRAIN_LIVE_CUDA_BACKEND
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend)) cuda->abort_communicators();
#endif
}

}  // namespace simtrain
