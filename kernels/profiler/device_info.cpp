#include "device_info.hpp"

#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda_check.hpp"

namespace simtrain {

namespace {

// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version(int version) { return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10); }

int attribute(cudaDeviceAttr which) {
  int value = 0;
  cuda::check(cudaDeviceGetAttribute(&value, which, 0), "cudaDeviceGetAttribute");
  return value;
}

}  // namespace

void require_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) throw std::runtime_error(std::string("no CUDA device: ") + cudaGetErrorString(status));
  if (count == 0) throw std::runtime_error("no CUDA device: the driver sees none");
  cuda::check(cudaSetDevice(0), "cudaSetDevice");
}

nlohmann::json device_info() {
  cudaDeviceProp properties{};
  cuda::check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  cuda::check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  cuda::check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  const size_t cublas = cublasLtGetVersion();  // 10000 * major + 100 * minor + patch
  return {{"name", properties.name},
          {"sm_count", properties.multiProcessorCount},
          {"compute_capability", std::to_string(properties.major) + "." + std::to_string(properties.minor)},
          {"sm_clock_max_MHz", attribute(cudaDevAttrClockRate) / 1000},
          {"memory_clock_max_MHz", attribute(cudaDevAttrMemoryClockRate) / 1000},
          {"memory_bytes", properties.totalGlobalMem},
          {"l2_cache_bytes", properties.l2CacheSize},
          {"driver_version", cuda_version(driver)},
          {"cuda_runtime_version", cuda_version(runtime)},
          {"cublas_version", std::to_string(cublas / 10000) + "." + std::to_string(cublas / 100 % 100) + "." +
                                 std::to_string(cublas % 100)}};
}

}  // namespace simtrain
