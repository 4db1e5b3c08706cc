#include "prepared_kernel.hpp"

#include <cmath>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "activations.hpp"
#include "adamw.hpp"
#include "attention.hpp"
#include "cross_entropy.hpp"
#include "elementwise.hpp"
#include "embedding.hpp"
#include "fill.hpp"
#include "norms.hpp"

namespace simtrain {

PreparedKernel::PreparedKernel(const KernelCall& call, const cuda::CublasLt& cublas, cudaStream_t stream)
    : stream_(stream) {
  prepare_any(call, &cublas);
  cuda::check(cudaStreamSynchronize(stream_), "filling the inputs");
}

PreparedKernel::PreparedKernel(const KernelCall& call, Counting) : counting_(true) { prepare_any(call, nullptr); }

double PreparedKernel::bytes_needed(const KernelCall& call) { return PreparedKernel(call, Counting{}).counted_bytes_; }

void PreparedKernel::prepare_any(const KernelCall& call, const cuda::CublasLt* cublas) {
  if (call.kernel == Kernel::gemm)
    prepare_gemm(call, cublas);
  else if (call.dtype == Dtype::fp16)
    prepare<__half>(call);
  else
    prepare<__nv_bfloat16>(call);
}

void* PreparedKernel::zeroed(int64_t bytes) {
  if (counting_) {
    counted_bytes_ += double(bytes);
    return nullptr;
  }
  buffers_.emplace_back(size_t(bytes));
  cuda::check(cudaMemsetAsync(buffers_.back().get(), 0, size_t(bytes), stream_), "cudaMemsetAsync");
  return buffers_.back().get();
}

template <typename E>
E* PreparedKernel::filled(int64_t count, float low, float high) {
  E* data = static_cast<E*>(zeroed(count * int64_t(sizeof(E))));
  if (counting_) return data;
  cuda::fill_uniform(data, count, low, high, seed_++, stream_);
  return data;
}

int* PreparedKernel::indices(int64_t count, int64_t range) {
  int* data = static_cast<int*>(zeroed(count * int64_t(sizeof(int))));
  if (counting_) return data;
  cuda::fill_indices(data, count, int(range), seed_++, stream_);
  return data;
}

void PreparedKernel::prepare_gemm(const KernelCall& call, const cuda::CublasLt* cublas) {
  const int64_t m = call.sizes.at(0), n = call.sizes.at(1), k = call.sizes.at(2);
  if (!counting_) gemm_ = std::make_unique<cuda::GemmPlan>(*cublas, call.dtype, m, n, k);
  void *x, *w;
  if (call.dtype == Dtype::fp8) {
    x = filled<__nv_fp8_e4m3>(m * k), w = filled<__nv_fp8_e4m3>(n * k);
  } else if (call.dtype == Dtype::fp16) {
    x = filled<__half>(m * k), w = filled<__half>(n * k);
  } else {
    x = filled<__nv_bfloat16>(m * k), w = filled<__nv_bfloat16>(n * k);
  }
  void* y = zeroed(m * n * int64_t(cuda::gemm_output_bytes(call.dtype)));
  void* workspace = zeroed(cuda::GemmPlan::kWorkspaceBytes);
  const cuda::GemmPlan* plan = gemm_.get();
  launch_ = [=](cudaStream_t s) { plan->run(x, w, y, workspace, s); };
}

template <typename T>
void PreparedKernel::prepare(const KernelCall& call) {
  const std::vector<int64_t>& size = call.sizes;
  switch (call.kernel) {
    case Kernel::gemm: break;  // prepare_gemm
    case Kernel::attention_forward: {
      const AttentionShape shape{size.at(0), size.at(1), size.at(2), size.at(3)};
      cuda::check_attention_shape(shape);
      const T *q = filled<T>(shape.elements()), *k = filled<T>(shape.elements()), *v = filled<T>(shape.elements());
      T* out = filled<T>(shape.elements());
      float* lse = filled<float>(shape.rows());
      launch_ = [=](cudaStream_t s) { cuda::attention_forward(q, k, v, out, lse, shape, s); };
      return;
    }
    case Kernel::attention_backward: {
      const AttentionShape shape{size.at(0), size.at(1), size.at(2), size.at(3)};
      cuda::check_attention_shape(shape);
      const int64_t n = shape.elements();
      const T *q = filled<T>(n), *k = filled<T>(n), *v = filled<T>(n), *out = filled<T>(n), *dout = filled<T>(n);
      const float* lse = filled<float>(shape.rows(), 1, 2);
      T *dq = filled<T>(n), *dk = filled<T>(n), *dv = filled<T>(n);
      void* workspace = zeroed(int64_t(cuda::attention_backward_workspace_bytes(shape)));
      launch_ = [=](cudaStream_t s) { cuda::attention_backward(q, k, v, out, dout, lse, dq, dk, dv, workspace, shape, s); };
      return;
    }
    case Kernel::layernorm_forward:
    case Kernel::rmsnorm_forward: {
      const int64_t rows = size.at(0), cols = size.at(1);
      const T *x = filled<T>(rows * cols), *gamma = filled<T>(cols), *beta = filled<T>(cols);
      T* y = filled<T>(rows * cols);
      float *mean = filled<float>(rows), *rstd = filled<float>(rows);
      if (call.kernel == Kernel::layernorm_forward)
        launch_ = [=](cudaStream_t s) { cuda::layernorm_forward(x, gamma, beta, y, mean, rstd, rows, cols, s); };
      else
        launch_ = [=](cudaStream_t s) { cuda::rmsnorm_forward(x, gamma, y, rstd, rows, cols, s); };
      return;
    }
    case Kernel::layernorm_backward:
    case Kernel::rmsnorm_backward: {
      const int64_t rows = size.at(0), cols = size.at(1);
      const T *dy = filled<T>(rows * cols), *x = filled<T>(rows * cols), *gamma = filled<T>(cols);
      const float *mean = filled<float>(rows, -0.1f, 0.1f), *rstd = filled<float>(rows, 0.5f, 1.5f);
      T* dx = filled<T>(rows * cols);
      float *dgamma = filled<float>(cols), *dbeta = filled<float>(cols);
      if (call.kernel == Kernel::layernorm_backward)
        launch_ = [=](cudaStream_t s) {
          cuda::layernorm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, cols, s);
        };
      else
        launch_ = [=](cudaStream_t s) { cuda::rmsnorm_backward(dy, x, gamma, rstd, dx, dgamma, rows, cols, s); };
      return;
    }
    case Kernel::gelu_forward: {
      const int64_t n = size.at(0);
      const T* x = filled<T>(n);
      T* y = filled<T>(n);
      launch_ = [=](cudaStream_t s) { cuda::gelu_forward(x, y, n, s); };
      return;
    }
    case Kernel::gelu_backward: {
      const int64_t n = size.at(0);
      const T *dy = filled<T>(n), *x = filled<T>(n);
      T* dx = filled<T>(n);
      launch_ = [=](cudaStream_t s) { cuda::gelu_backward(dy, x, dx, n, s); };
      return;
    }
    case Kernel::swiglu_forward: {
      const int64_t n = size.at(0);
      const T *gate = filled<T>(n), *up = filled<T>(n);
      T* y = filled<T>(n);
      launch_ = [=](cudaStream_t s) { cuda::swiglu_forward(gate, up, y, n, s); };
      return;
    }
    case Kernel::swiglu_backward: {
      const int64_t n = size.at(0);
      const T *dy = filled<T>(n), *gate = filled<T>(n), *up = filled<T>(n);
      T *dgate = filled<T>(n), *dup = filled<T>(n);
      launch_ = [=](cudaStream_t s) { cuda::swiglu_backward(dy, gate, up, dgate, dup, n, s); };
      return;
    }
    case Kernel::cross_entropy_forward:
    case Kernel::cross_entropy_backward: {
      const int64_t rows = size.at(0), vocab = size.at(1);
      const float* logits = filled<float>(rows * vocab, -4, 4);
      const int* targets = indices(rows, vocab);
      if (call.kernel == Kernel::cross_entropy_forward) {
        float *loss = filled<float>(rows), *lse = filled<float>(rows);
        launch_ = [=](cudaStream_t s) { cuda::cross_entropy_forward(logits, targets, loss, lse, rows, vocab, s); };
      } else {
        const float ln_vocab = std::log(float(vocab));
        const float *lse = filled<float>(rows, ln_vocab, ln_vocab + 1), *dloss = filled<float>(rows);
        float* dlogits = filled<float>(rows * vocab);
        launch_ = [=](cudaStream_t s) {
          cuda::cross_entropy_backward(logits, targets, lse, dloss, dlogits, rows, vocab, s);
        };
      }
      return;
    }
    case Kernel::adamw: {
      const int64_t n = size.at(0);
      float *param = filled<float>(n), *m = filled<float>(n, -1e-3f, 1e-3f), *v = filled<float>(n, 0, 1e-6f);
      const float* grad = filled<float>(n, -1e-3f, 1e-3f);
      T* weight = filled<T>(n);
      launch_ = [=](cudaStream_t s) { cuda::adamw(param, m, v, grad, weight, n, math::AdamWConfig{}, s); };
      return;
    }
    case Kernel::embedding_forward:
    case Kernel::embedding_backward: {
      // {tokens, hidden, table rows, tables}; the position table has a row per token.
      const int64_t tokens = size.at(0), hidden = size.at(1), table_rows = size.at(2);
      const bool positions = size.at(3) > 1;
      const int* ids = indices(tokens, table_rows);
      const int* position_ids = positions ? indices(tokens, tokens) : nullptr;
      if (call.kernel == Kernel::embedding_forward) {
        const T* table = filled<T>(table_rows * hidden);
        const T* position_table = positions ? filled<T>(tokens * hidden) : nullptr;
        T* out = filled<T>(tokens * hidden);
        launch_ = [=](cudaStream_t s) {
          cuda::embedding_forward(table, ids, position_table, position_ids, out, tokens, hidden, s);
        };
      } else {
        const T* dout = filled<T>(tokens * hidden);
        float* dtable = static_cast<float*>(zeroed(table_rows * hidden * int64_t(sizeof(float))));
        float* dpositions = positions ? static_cast<float*>(zeroed(tokens * hidden * int64_t(sizeof(float)))) : nullptr;
        launch_ = [=](cudaStream_t s) {
          cuda::embedding_backward(dout, ids, position_ids, dtable, dpositions, tokens, hidden, s);
        };
      }
      return;
    }
    case Kernel::elementwise: {
      const int64_t vectors = cuda::stream_vectors(size.at(0));
      const float4* in = reinterpret_cast<const float4*>(filled<float>(4 * vectors));
      float4* out = reinterpret_cast<float4*>(filled<float>(4 * vectors));
      launch_ = [=](cudaStream_t s) { cuda::stream_bytes(in, out, vectors, 0.5f, s); };
      return;
    }
  }
}

}  // namespace simtrain
