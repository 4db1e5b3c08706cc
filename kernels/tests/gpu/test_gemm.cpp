// cuBLASLt GEMMs against the CPU reference in bf16, fp16 and fp8, and the
// throughput of the 8192^3 bf16 GEMM against the GPU's spec sheet.
#include <cstdio>

#include "gemm.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "gpu_test_support.hpp"
#include "kernel_timer.hpp"
#include "sim/model/profile_database.hpp"
#include "reference/gemm.hpp"

namespace simtrain::testing_gpu {
namespace {

class Gemm : public GpuTest {
protected:
  // y = x w^T for the given element type T of x and w; Y of y.
  template <typename T, typename Y>
  void check(Dtype dtype, double tol) {
    const int64_t m = 96, n = 80, k = 64;
    const std::vector<float> x = rounded<T>(random_values(m * k, 1)), w = rounded<T>(random_values(n * k, 2));
    const auto x_d = upload<T>(x), w_d = upload<T>(w);
    cuda::DeviceBuffer<Y> y_d(m * n);
    cuda::DeviceBuffer<std::byte> workspace(cuda::GemmPlan::kWorkspaceBytes);
    const cuda::CublasLt cublas;
    const cuda::GemmPlan plan(cublas, dtype, m, n, k);
    plan.run(x_d.get(), w_d.get(), y_d.get(), workspace.get(), 0);
    synchronize();
    expect_close(download(y_d), reference::gemm(x, w, m, n, k), tol, "y");
  }
};

TEST_F(Gemm, Bf16) { check<__nv_bfloat16, __nv_bfloat16>(Dtype::bf16, kBf16Tolerance); }

TEST_F(Gemm, Fp16) { check<__half, __half>(Dtype::fp16, kFp16Tolerance); }

TEST_F(Gemm, Fp8WithBf16Output) {
  cudaDeviceProp properties{};
  ASSERT_EQ(cudaGetDeviceProperties(&properties, 0), cudaSuccess);
  if (properties.major * 10 + properties.minor < 89)
    GTEST_SKIP() << "fp8 GEMMs need compute capability 8.9, this GPU has " << properties.major << "."
                 << properties.minor;
  check<__nv_fp8_e4m3, __nv_bfloat16>(Dtype::fp8, kBf16Tolerance);
}

TEST_F(Gemm, Throughput8192Cubed) {
  const int64_t size = 8192;
  cuda::DeviceBuffer<__nv_bfloat16> x(size * size), w(size * size), y(size * size);
  ASSERT_EQ(cudaMemset(x.get(), 0, x.bytes()), cudaSuccess);  // zeros: no NaNs, and cuBLAS does not skip them
  ASSERT_EQ(cudaMemset(w.get(), 0, w.bytes()), cudaSuccess);
  cuda::DeviceBuffer<std::byte> workspace(cuda::GemmPlan::kWorkspaceBytes);
  const cuda::CublasLt cublas;
  const cuda::GemmPlan plan(cublas, Dtype::bf16, size, size, size);
  KernelTimer timer(0);
  const TimingSummary t = timer.time([&](cudaStream_t s) { plan.run(x.get(), w.get(), y.get(), workspace.get(), s); });
  const double tflops = 2.0 * size * size * size / t.median_seconds / 1e12;
  cudaDeviceProp properties{};
  ASSERT_EQ(cudaGetDeviceProperties(&properties, 0), cudaSuccess);
  std::printf("8192^3 bf16 GEMM on %s: %.1f TFLOP/s (median of %lld, %.3f ms)\n", properties.name, tflops,
              static_cast<long long>(t.repetitions), t.median_seconds * 1e3);
  for (const GpuSpec& gpu : builtin_gpus())
    if (same_gpu(properties.name, gpu.name))
      std::printf("  %.0f %% of the %s spec-sheet dense bf16 peak (%.0f TFLOP/s)\n", 100 * tflops * 1e12 / gpu.peak_bf16_flops,
                  gpu.name.c_str(), gpu.peak_bf16_flops / 1e12);
  EXPECT_GT(tflops, 0);
}

}  // namespace
}  // namespace simtrain::testing_gpu
