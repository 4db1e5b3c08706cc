#pragma once
// A kernel call (kernels/kernel_call.hpp) made ready to run on the CPU:
// GEMMs and attention on OpenBLAS (kernels/host/, by blocks of GEMMs for
// attention), GELU vectorised (kernels/host/gelu.hpp), the other kernels with the reference implementations of
// kernels/reference/; inputs of its real sizes, filled with pseudo-random
// values. The host backend's compute.
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

// A cut-down call of the same kernel, quick to time, and how many times more
// the whole call's loops run: the kernels' loops run a number of
// times known from the sizes (gemm M*N*K; causal attention
// B*H*S(S+1)/2*D; embeddings tokens*hidden; the others once per element),
// so the whole call takes about `scale` times the sample's time (the
// sample's buffers fit in faster caches: a little less, for the largest
// calls). Leading sizes are halved (gemm: the larger of M and N, so that
// BLAS still multiplies blocks; attention: batch, heads, then sequence;
// embeddings: tokens, then table rows) until the sample's loops run at most
// 2^26 times (the BLAS kernels: gemm, attention) or 2^20 times (the
// references) and its buffers hold at most 16 MiB.
// Throws std::invalid_argument as CpuKernel does.
struct KernelSample {
  KernelCall call;
  double scale = 1;
};
KernelSample kernel_sample(const KernelCall& call);

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

  // Seconds run() of `call` takes on this host, as loaded as it is now:
  // kernel_sample's call run for at least 20 ms, its mean time times its
  // scale. Allocates the sample's buffers only.
  static double estimated_seconds(const KernelCall& call);

private:
  KernelCall call_;
  // The buffers, in the order run() passes them (cpu_kernel.cpp's plan()).
  std::vector<std::vector<float>> floats_;
  std::vector<std::vector<int>> ints_;  // indices: targets, token and position ids
};

}  // namespace simtrain
