#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

#include "attention.hpp"
#include "cuda_check.hpp"
#include "device_math.cuh"

namespace simtrain::cuda {

namespace {

constexpr int kTile = 32;      // queries and keys per tile; one key per lane
constexpr int kThreads = 128;  // 4 warps

// Row stride of a tile in shared memory: one float of padding, so that a warp
// reading one element from each of 32 rows hits 32 different banks.
__host__ __device__ inline int padded(int head_dim) { return head_dim + 1; }

// Copies rows [first, first + kTile) of a [seq][head_dim] matrix into a
// padded fp32 tile; rows past the end are zero.
template <typename T>
__device__ void load_tile(float* tile, const T* matrix, int first, int seq, int head_dim) {
  for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
    const int row = e / head_dim, col = e % head_dim;
    tile[row * padded(head_dim) + col] =
        first + row < seq ? to_float(matrix[int64_t(first + row) * head_dim + col]) : 0.f;
  }
}

__device__ inline float dot(const float* a, const float* b, int n) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Grid: (query tiles, batch * heads). Shared: q, k, v tiles, the output
// accumulator and the 32 x 32 scores; per row the running max and sum.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(const T* q, const T* k, const T* v, T* out, float* lse, int seq, int head_dim,
                             float scale) {
  extern __shared__ float shared[];
  const int stride = padded(head_dim);
  const auto tile = [&](int index) { return shared + index * kTile * stride; };
  float *q_tile = tile(0), *k_tile = tile(1), *v_tile = tile(2), *o_tile = tile(3);
  float* p_tile = tile(4);  // [kTile][kTile + 1]
  __shared__ float row_max[kTile], row_sum[kTile], row_rescale[kTile];

  const int64_t head_offset = int64_t(blockIdx.y) * seq * head_dim;
  const int q_first = blockIdx.x * kTile;
  load_tile(q_tile, q + head_offset, q_first, seq, head_dim);
  for (int e = threadIdx.x; e < kTile * stride; e += blockDim.x) o_tile[e] = 0.f;
  if (threadIdx.x < kTile) row_max[threadIdx.x] = -INFINITY, row_sum[threadIdx.x] = 0.f;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // Causal: key tiles up to the diagonal one, which holds every row's own key.
  for (int tile = 0; tile <= int(blockIdx.x); ++tile) {
    const int k_first = tile * kTile;
    __syncthreads();  // the previous tile is fully used
    load_tile(k_tile, k + head_offset, k_first, seq, head_dim);
    load_tile(v_tile, v + head_offset, k_first, seq, head_dim);
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
      const int row = e / kTile, key = e % kTile;
      const bool visible = k_first + key <= q_first + row && k_first + key < seq;
      p_tile[row * (kTile + 1) + key] =
          visible ? scale * dot(&q_tile[row * stride], &k_tile[key * stride], head_dim) : -INFINITY;
    }
    __syncthreads();
    // Online softmax: each warp takes 8 rows, lane j holds key j.
    for (int row = warp; row < kTile; row += kThreads / 32) {
      const float old_max = row_max[row];
      const float score = p_tile[row * (kTile + 1) + lane];
      const float new_max = fmaxf(old_max, warp_reduce(score, Max{}));
      const float p = new_max == -INFINITY ? 0.f : expf(score - new_max);
      const float rescale = old_max == -INFINITY ? 0.f : expf(old_max - new_max);
      const float tile_sum = warp_reduce(p, Sum{});
      p_tile[row * (kTile + 1) + lane] = p;
      if (lane == 0) {
        row_max[row] = new_max;
        row_sum[row] = row_sum[row] * rescale + tile_sum;
        row_rescale[row] = rescale;
      }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
      const int row = e / head_dim, col = e % head_dim;
      float acc = o_tile[row * stride + col] * row_rescale[row];
      for (int key = 0; key < kTile; ++key) acc += p_tile[row * (kTile + 1) + key] * v_tile[key * stride + col];
      o_tile[row * stride + col] = acc;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
    const int row = e / head_dim, col = e % head_dim;
    if (q_first + row < seq)
      out[head_offset + int64_t(q_first + row) * head_dim + col] = from_float<T>(o_tile[row * stride + col] / row_sum[row]);
  }
  if (threadIdx.x < kTile && q_first + int(threadIdx.x) < seq)
    lse[int64_t(blockIdx.y) * seq + q_first + threadIdx.x] = row_max[threadIdx.x] + logf(row_sum[threadIdx.x]);
}

// delta[row] = sum_c dout[row][c] * out[row][c]; one warp per row.
template <typename T>
__global__ void attention_delta_kernel(const T* out, const T* dout, float* delta, int64_t rows, int head_dim) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together
  float sum = 0;
  for (int c = lane; c < head_dim; c += 32) sum += to_float(dout[row * head_dim + c]) * to_float(out[row * head_dim + c]);
  sum = warp_reduce(sum, Sum{});
  if (lane == 0) delta[row] = sum;
}

// Grid: (key tiles, batch * heads). Each block keeps its keys' dk, dv in
// shared memory and walks the query tiles at and below the diagonal; dq is
// accumulated across blocks with fp32 atomics (already scaled).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attention_backward_kernel(const T* q, const T* k, const T* v, const T* dout, const float* lse,
                              const float* delta, float* dq_accumulator, T* dk, T* dv, int seq, int head_dim,
                              float scale) {
  extern __shared__ float shared[];
  const int stride = padded(head_dim);
  const auto tile = [&](int index) { return shared + index * kTile * stride; };
  float *k_tile = tile(0), *v_tile = tile(1), *q_tile = tile(2), *do_tile = tile(3), *dk_tile = tile(4),
        *dv_tile = tile(5);
  float* p_tile = tile(6);                        // [query][key], kTile + 1 per row
  float* ds_tile = p_tile + kTile * (kTile + 1);  // same layout
  __shared__ float row_lse[kTile], row_delta[kTile];

  const int64_t head_offset = int64_t(blockIdx.y) * seq * head_dim;
  const int64_t head_rows = int64_t(blockIdx.y) * seq;
  const int k_first = blockIdx.x * kTile;
  load_tile(k_tile, k + head_offset, k_first, seq, head_dim);
  load_tile(v_tile, v + head_offset, k_first, seq, head_dim);
  for (int e = threadIdx.x; e < kTile * stride; e += blockDim.x) dk_tile[e] = dv_tile[e] = 0.f;

  const int q_tiles = (seq + kTile - 1) / kTile;
  for (int tile = blockIdx.x; tile < q_tiles; ++tile) {
    const int q_first = tile * kTile;
    __syncthreads();  // the previous query tile is fully used
    load_tile(q_tile, q + head_offset, q_first, seq, head_dim);
    load_tile(do_tile, dout + head_offset, q_first, seq, head_dim);
    if (threadIdx.x < kTile) {
      const bool valid = q_first + int(threadIdx.x) < seq;
      row_lse[threadIdx.x] = valid ? lse[head_rows + q_first + threadIdx.x] : 0.f;
      row_delta[threadIdx.x] = valid ? delta[head_rows + q_first + threadIdx.x] : 0.f;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
      const int row = e / kTile, key = e % kTile;
      const bool visible = k_first + key <= q_first + row && q_first + row < seq && k_first + key < seq;
      float p = 0, ds = 0;
      if (visible) {
        p = expf(scale * dot(&q_tile[row * stride], &k_tile[key * stride], head_dim) - row_lse[row]);
        ds = p * (dot(&do_tile[row * stride], &v_tile[key * stride], head_dim) - row_delta[row]);
      }
      p_tile[row * (kTile + 1) + key] = p;
      ds_tile[row * (kTile + 1) + key] = ds;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
      const int key = e / head_dim, col = e % head_dim;
      float dv_sum = 0, dk_sum = 0;
      for (int row = 0; row < kTile; ++row) {
        dv_sum += p_tile[row * (kTile + 1) + key] * do_tile[row * stride + col];
        dk_sum += ds_tile[row * (kTile + 1) + key] * q_tile[row * stride + col];
      }
      dv_tile[key * stride + col] += dv_sum;
      dk_tile[key * stride + col] += scale * dk_sum;
    }
    for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
      const int row = e / head_dim, col = e % head_dim;
      if (q_first + row >= seq) continue;
      float dq_sum = 0;
      for (int key = 0; key < kTile; ++key) dq_sum += ds_tile[row * (kTile + 1) + key] * k_tile[key * stride + col];
      atomicAdd(&dq_accumulator[head_offset + int64_t(q_first + row) * head_dim + col], scale * dq_sum);
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * head_dim; e += blockDim.x) {
    const int key = e / head_dim, col = e % head_dim;
    if (k_first + key >= seq) continue;
    const int64_t index = head_offset + int64_t(k_first + key) * head_dim + col;
    dk[index] = from_float<T>(dk_tile[key * stride + col]);
    dv[index] = from_float<T>(dv_tile[key * stride + col]);
  }
}

template <typename T>
__global__ void convert_kernel(const float* in, T* out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = from_float<T>(in[i]);
}

size_t forward_shared_bytes(int head_dim) {
  return sizeof(float) * (4 * kTile * padded(head_dim) + kTile * (kTile + 1));
}

size_t backward_shared_bytes(int head_dim) {
  return sizeof(float) * (6 * kTile * padded(head_dim) + 2 * kTile * (kTile + 1));
}

// Kernels above 48 KiB of dynamic shared memory must say so before launch.
template <typename Kernel>
void allow_shared_bytes(Kernel kernel, size_t bytes) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
        "cudaFuncSetAttribute(attention shared memory)");
}

float scale_of(const AttentionShape& shape) { return 1.f / sqrtf(float(shape.head_dim)); }

dim3 tiles_grid(const AttentionShape& shape) {
  return dim3(unsigned((shape.seq + kTile - 1) / kTile), unsigned(shape.batch * shape.heads));
}

}  // namespace

void check_attention_shape(const AttentionShape& shape) {
  if (shape.head_dim < 1 || shape.head_dim > kMaxHeadDim)
    throw std::invalid_argument("attention head_dim " + std::to_string(shape.head_dim) + " is not in 1.." +
                                std::to_string(kMaxHeadDim));
  if (shape.seq < 1 || shape.batch < 1 || shape.heads < 1 || shape.batch * shape.heads > 65535)
    throw std::invalid_argument("attention batch x heads must be in 1..65535 and seq positive");
}

template <typename T>
void attention_forward(const T* q, const T* k, const T* v, T* out, float* lse, const AttentionShape& shape,
                       cudaStream_t stream) {
  check_attention_shape(shape);
  const size_t bytes = forward_shared_bytes(int(shape.head_dim));
  allow_shared_bytes(attention_forward_kernel<T>, bytes);
  attention_forward_kernel<T><<<tiles_grid(shape), kThreads, bytes, stream>>>(
      q, k, v, out, lse, int(shape.seq), int(shape.head_dim), scale_of(shape));
  check_launch("attention_forward_kernel");
}

size_t attention_backward_workspace_bytes(const AttentionShape& shape) {
  return sizeof(float) * (shape.elements() + shape.rows());
}

template <typename T>
void attention_backward(const T* q, const T* k, const T* v, const T* out, const T* dout, const float* lse, T* dq,
                        T* dk, T* dv, void* workspace, const AttentionShape& shape, cudaStream_t stream) {
  check_attention_shape(shape);
  float* dq_accumulator = static_cast<float*>(workspace);
  float* delta = dq_accumulator + shape.elements();
  check(cudaMemsetAsync(dq_accumulator, 0, sizeof(float) * shape.elements(), stream), "cudaMemsetAsync(dq)");
  const int rows_per_block = kThreads / 32;
  attention_delta_kernel<T><<<unsigned((shape.rows() + rows_per_block - 1) / rows_per_block), kThreads, 0, stream>>>(
      out, dout, delta, shape.rows(), int(shape.head_dim));
  check_launch("attention_delta_kernel");
  const size_t bytes = backward_shared_bytes(int(shape.head_dim));
  allow_shared_bytes(attention_backward_kernel<T>, bytes);
  attention_backward_kernel<T><<<tiles_grid(shape), kThreads, bytes, stream>>>(
      q, k, v, dout, lse, delta, dq_accumulator, dk, dv, int(shape.seq), int(shape.head_dim), scale_of(shape));
  check_launch("attention_backward_kernel");
  convert_kernel<T><<<grid_for(shape.elements(), 256), 256, 0, stream>>>(dq_accumulator, dq, shape.elements());
  check_launch("convert_kernel");
}

#define SIMTRAIN_INSTANTIATE(T)                                                                                   \
  template void attention_forward<T>(const T*, const T*, const T*, T*, float*, const AttentionShape&,            \
                                     cudaStream_t);                                                              \
  template void attention_backward<T>(const T*, const T*, const T*, const T*, const T*, const float*, T*, T*, T*, \
                                      void*, const AttentionShape&, cudaStream_t);
SIMTRAIN_INSTANTIATE(__nv_bfloat16)
SIMTRAIN_INSTANTIATE(__half)
#undef SIMTRAIN_INSTANTIATE

}  // namespace simtrain::cuda
