#include "cross_entropy.hpp"
#include "cuda_check.hpp"
#include "device_math.cuh"

namespace simtrain::cuda {

namespace {

constexpr int kThreads = 256;

// One block per row, one pass over it: each thread keeps a running max and a
// sum of exponentials relative to it, and the block combines them.
__global__ void __launch_bounds__(kThreads)
    cross_entropy_forward_kernel(const float* logits, const int* targets, float* loss, float* lse, int64_t vocab) {
  const int64_t row = blockIdx.x;
  const float* in = logits + row * vocab;
  float max = -INFINITY, sum = 0;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
    const float x = in[c];
    if (x > max) {
      sum = sum * expf(max - x) + 1.f;
      max = x;
    } else {
      sum += expf(x - max);
    }
  }
  const float row_max = block_max(max);
  const float row_sum = block_sum(max == -INFINITY ? 0.f : sum * expf(max - row_max));
  if (threadIdx.x == 0) {
    const float log_sum_exp = row_max + logf(row_sum);
    lse[row] = log_sum_exp;
    loss[row] = log_sum_exp - in[targets[row]];
  }
}

__global__ void __launch_bounds__(kThreads)
    cross_entropy_backward_kernel(const float* logits, const int* targets, const float* lse, const float* dloss,
                                  float* dlogits, int64_t vocab) {
  const int64_t row = blockIdx.x;
  const float row_lse = lse[row], scale = dloss[row];
  const int target = targets[row];
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
    const float softmax = expf(logits[row * vocab + c] - row_lse);
    dlogits[row * vocab + c] = (softmax - (c == target ? 1.f : 0.f)) * scale;
  }
}

}  // namespace

void cross_entropy_forward(const float* logits, const int* targets, float* loss, float* lse, int64_t rows,
                           int64_t vocab, cudaStream_t stream) {
  cross_entropy_forward_kernel<<<unsigned(rows), kThreads, 0, stream>>>(logits, targets, loss, lse, vocab);
  check_launch("cross_entropy_forward_kernel");
}

void cross_entropy_backward(const float* logits, const int* targets, const float* lse, const float* dloss,
                            float* dlogits, int64_t rows, int64_t vocab, cudaStream_t stream) {
  cross_entropy_backward_kernel<<<unsigned(rows), kThreads, 0, stream>>>(logits, targets, lse, dloss, dlogits, vocab);
  check_launch("cross_entropy_backward_kernel");
}

}  // namespace simtrain::cuda
