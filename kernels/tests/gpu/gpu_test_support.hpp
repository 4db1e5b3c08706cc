#pragma once
// What the GPU kernel tests share: skipping where there is no GPU, inputs
// rounded to the kernel's element type (so the CPU reference sees exactly
// what the GPU does), and comparison with per-dtype tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "../random_values.hpp"
#include "device_buffer.hpp"

namespace simtrain::testing_gpu {

// Relative tolerances: one rounding of the output to the type, with margin.
inline constexpr double kBf16Tolerance = 1e-2;
inline constexpr double kFp16Tolerance = 1e-3;
inline constexpr double kFp32Tolerance = 1e-5;

template <typename T>
constexpr double tolerance() {
  return std::is_same_v<T, __half> ? kFp16Tolerance : kBf16Tolerance;
}

// Every GPU test derives from this: without a usable device it skips, saying why.
class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) GTEST_SKIP() << "no CUDA device: " << cudaGetErrorString(status);
    if (count == 0) GTEST_SKIP() << "no CUDA device: the driver sees none";
  }
};

using kernel_tests::random_values;

// `values` as the GPU holds them in T.
template <typename T>
std::vector<float> rounded(std::vector<float> values) {
  for (float& v : values) v = float(T(v));
  return values;
}

template <typename T>
cuda::DeviceBuffer<T> upload(const std::vector<float>& values) {
  std::vector<T> converted(values.begin(), values.end());
  return cuda::DeviceBuffer<T>(converted);
}

template <typename T>
std::vector<float> download(const cuda::DeviceBuffer<T>& buffer) {
  const std::vector<T> host = buffer.to_host();
  std::vector<float> values;
  for (const T& v : host) values.push_back(float(v));
  return values;
}

inline double largest_magnitude(const std::vector<float>& values) {
  double largest = 0;
  for (float v : values) largest = std::max(largest, double(std::abs(v)));
  return largest;
}

inline void synchronize() { ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); }

// |actual - expected| <= tolerance * max(|expected|, 1% of the largest |expected|):
// relative error, with values near zero compared relative to the tensor's scale.
// Where the values are differences of terms that cancel (a gradient that is
// zero in closed form), fp32 rounding leaves up to `terms` x FLT_EPSILON x
// `term_size` of them, whatever the tensor's scale: that much is allowed too.
struct CancellingTerms {
  double terms = 0, term_size = 0;
};

inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, double tolerance,
                         const std::string& what, CancellingTerms cancelling = {}) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  const double largest = largest_magnitude(expected);
  const double rounding = cancelling.terms * std::numeric_limits<float>::epsilon() * cancelling.term_size;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 10; ++i) {
    const double allowed = std::max(tolerance * std::max(double(std::abs(expected[i])), 0.01 * largest), rounding);
    if (!(std::abs(double(actual[i]) - expected[i]) <= allowed)) {
      ++failures;
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << " vs reference " << expected[i] << " (allowed "
                    << allowed << ")";
    }
  }
}

}  // namespace simtrain::testing_gpu
