#pragma once
// CPU reference of the GEMM: y[m][n] = sum_k x[m][k] * w[n][k], row-major
// (w stored as a linear layer's weight, [out][in]); double accumulation.
#include <cstdint>
#include <vector>

namespace simtrain::reference {

std::vector<float> gemm(const std::vector<float>& x, const std::vector<float>& w, int64_t m, int64_t n, int64_t k);

}  // namespace simtrain::reference
