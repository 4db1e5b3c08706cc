#pragma once
// GEMM through cuBLASLt: y[M][N] = x[M][K] * w[N][K]^T, row-major, as a linear
// layer computes it (the "TN" layout cuBLASLt requires for fp8). bf16 and
// fp16 inputs and output; fp8 (e4m3) inputs with bf16 output on GPUs of
// compute capability 8.9 and later. Accumulation in fp32.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "sim/scenario/scenario.hpp"

namespace simtrain::cuda {

// Owns a cuBLASLt object (a pointer type) and destroys it with `Destroy`.
template <typename Handle, auto Destroy>
struct CublasDeleter {
  void operator()(Handle handle) const { Destroy(handle); }
};
template <typename Handle, auto Destroy>
using CublasObject = std::unique_ptr<std::remove_pointer_t<Handle>, CublasDeleter<Handle, Destroy>>;

class CublasLt {
public:
  CublasLt();
  cublasLtHandle_t get() const { return handle_.get(); }

private:
  CublasObject<cublasLtHandle_t, cublasLtDestroy> handle_;
};

// One GEMM shape, its descriptors and the algorithm cuBLASLt's heuristic picks;
// run() may be called many times. Throws std::runtime_error where cuBLASLt
// has no algorithm (e.g. fp8 before compute capability 8.9).
class GemmPlan {
public:
  static constexpr size_t kWorkspaceBytes = 32u << 20;  // what cuBLAS recommends for Hopper

  GemmPlan(const CublasLt& cublas, Dtype dtype, int64_t m, int64_t n, int64_t k);

  // x, w: elements of the input type (bf16, fp16, fp8 e4m3); y: bf16 for fp8, else the input type.
  void run(const void* x, const void* w, void* y, void* workspace, cudaStream_t stream) const;

private:
  using Layout = CublasObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
  cublasLtHandle_t handle_;
  CublasObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> operation_;
  Layout w_layout_, x_layout_, y_layout_;
  cublasLtMatmulAlgo_t algorithm_{};
};

// Bytes of one element of the GEMM's inputs and of its output.
size_t gemm_input_bytes(Dtype dtype);
size_t gemm_output_bytes(Dtype dtype);

}  // namespace simtrain::cuda
