#pragma once
// A kernel call (kernel_call.hpp) made ready to launch: its inputs and
// outputs allocated on the GPU and filled with pseudo-random values.
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <cuda_runtime.h>

#include "device_buffer.hpp"
#include "gemm.hpp"
#include "kernel_call.hpp"

namespace simtrain {

class PreparedKernel {
public:
  // Throws std::runtime_error (e.g. out of memory) or std::invalid_argument
  // (a shape the kernel does not support).
  PreparedKernel(const KernelCall& call, const cuda::CublasLt& cublas, cudaStream_t stream);
  void launch(cudaStream_t stream) const { launch_(stream); }

  // The device bytes the constructor would allocate for `call`, without a GPU
  // and without allocating (the same code, counting instead of allocating).
  // Throws std::invalid_argument as the constructor does for a shape the
  // kernel does not support.
  static double bytes_needed(const KernelCall& call);

private:
  struct Counting {};
  PreparedKernel(const KernelCall& call, Counting);
  void prepare_any(const KernelCall& call, const cuda::CublasLt* cublas);

  void* zeroed(int64_t bytes);
  // A buffer of `count` elements of E, uniform in [low, high).
  template <typename E>
  E* filled(int64_t count, float low = -1, float high = 1);
  int* indices(int64_t count, int64_t range);
  template <typename T>
  void prepare(const KernelCall& call);
  void prepare_gemm(const KernelCall& call, const cuda::CublasLt* cublas);

  cudaStream_t stream_ = nullptr;
  bool counting_ = false;  // bytes_needed(): buffers are counted, not allocated, filled or launched
  double counted_bytes_ = 0;
  uint64_t seed_ = 1;
  std::vector<cuda::DeviceBuffer<std::byte>> buffers_;
  std::unique_ptr<cuda::GemmPlan> gemm_;
  std::function<void(cudaStream_t)> launch_;
};

}  // namespace simtrain
