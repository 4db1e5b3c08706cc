#pragma once
// GELU (tanh approximation) forward and backward for the live host backend:
// reference::gelu_forward / gelu_backward's formulas (kernel_math.hpp) with
// tanh as a rational function the compiler vectorises (Eigen's
// generic_fast_tanh_float: within a few float ulps), where the references
// call tanhf one element at a time, 40x slower here. Checked against the
// references in kernels/tests/test_host_kernels.cpp.
#include <cstdint>

namespace simtrain::host {

void gelu_forward(const float* x, float* y, int64_t n);
void gelu_backward(const float* dy, const float* x, float* dx, int64_t n);

}  // namespace simtrain::host
