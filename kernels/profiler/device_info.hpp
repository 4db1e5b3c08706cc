#pragma once
// The GPU the profiler runs on, as the database records it.
#include <nlohmann/json.hpp>

namespace simtrain {

// Selects GPU 0; throws std::runtime_error "no CUDA device: <why>" if there is none.
void require_device();

// Name, SM count, compute capability, clocks, memory, driver, CUDA runtime and cuBLAS versions.
nlohmann::json device_info();

}  // namespace simtrain
