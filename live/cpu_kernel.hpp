#pragma once
// A kernel call (kernels/kernel_call.hpp) made ready to run on the CPU with
// the reference implementations of kernels/reference/: inputs of its real
// sizes, filled with pseudo-random values. The host backend's compute.
//
// The buffers mirror what kernels/profiler/prepared_kernel.cpp allocates on
// the GPU, kernel by kernel, but every element is a float (the references
// compute in float and double; an int for indices), so a bf16 call holds
// twice the bytes it would on a GPU. The byte stream (Kernel::elementwise)
// has no reference: it reads the first half of one float buffer and writes
// the second half, moving the call's bytes. Results stay in members, so the
// work cannot be optimised away.
#include <cstdint>
#include <vector>

#include "kernel_call.hpp"

namespace simtrain {

class CpuKernel {
public:
  // Throws std::invalid_argument for sizes it cannot run (a wrong number of
  // sizes, a size below 1, buffers beyond what can be addressed, an index
  // range beyond int).
  explicit CpuKernel(const KernelCall& call);

  void run();             // one launch
  double bytes() const;   // memory it holds
  // What the constructor would allocate, without allocating; throws as the constructor does.
  static double bytes_needed(const KernelCall& call);

  const KernelCall& call() const { return call_; }

private:
  KernelCall call_;
  // The buffers, in the order run() passes them (cpu_kernel.cpp's plan()).
  std::vector<std::vector<float>> floats_;
  std::vector<std::vector<int>> ints_;  // indices: targets, token and position ids
};

}  // namespace simtrain
