#pragma once
// CUDA and cuBLAS status checks that throw std::runtime_error naming the call.
#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace simtrain::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasLtGetStatusString(status));
}

// Throws if the last launch failed to start (bad configuration, too much shared memory).
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace simtrain::cuda
