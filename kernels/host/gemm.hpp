#pragma once
// The GEMM of the live host backend, on OpenBLAS's cblas_sgemm: the same
// product as reference::gemm (y[m][n] = sum_k x[m][k] * w[n][k], row-major,
// w a linear layer's [out][in] weight) with float accumulation, checked
// against the reference in kernels/tests/test_host_kernels.cpp.
#include <cstdint>

namespace simtrain::host {

void gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k);

}  // namespace simtrain::host
