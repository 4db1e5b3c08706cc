#pragma once
// Times one kernel launch on a stream with CUDA events: warm-up runs, then
// repetitions (timing.hpp), each after an L2 flush, so that a kernel's
// inputs are read from memory as in a training step.
#include <cstddef>
#include <functional>

#include <cuda_runtime.h>

#include "device_buffer.hpp"
#include "timing.hpp"

namespace simtrain {

class KernelTimer {
public:
  explicit KernelTimer(cudaStream_t stream);
  TimingSummary time(const std::function<void(cudaStream_t)>& launch);

private:
  cudaStream_t stream_;
  cuda::DeviceBuffer<std::byte> flush_;  // twice the L2 cache
};

}  // namespace simtrain
