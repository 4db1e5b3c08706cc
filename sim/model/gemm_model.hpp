#pragma once
// How long one GEMM C[M,N] = A[M,K] B[K,N] takes on a GPU, from its shape, as
// NVIDIA's "Matrix Multiplication Background User's Guide" explains it
// (docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication):
// the output is cut into tiles, one thread block each; the tiles run in waves
// of one per SM; each tile steps through K at the SM's tensor rate. So
//   tiles   = ceil(M / tile_m) x ceil(N / tile_n)      (tile quantization; a tile
//             wider than the problem narrows to it, rounded up to 8)
//   waves   = ceil(tiles / sm_count)                   (wave quantization)
//   tile    = 2 tile_m tile_n K / (peak x sustained clock / tensor clock / sm_count)
//             + memory latency x 1 (the first K block, loaded before any MMA)
//             + tile_m tile_n x element bytes / (HBM bandwidth / sm_count) (the epilogue's write)
//   compute = waves x tile, with the tile shape that minimises it
// Where the output has fewer tiles than the GPU has SMs, cuBLAS also splits
// K into s slices, one thread block each, so that tiles x s fill the SMs
// (split-K: CUTLASS's "parallel split-K", cuBLAS's splitKreduce_kernel in
// Nsight traces): each block writes its partial tile in fp32, and a second
// kernel sums the s partials and writes the output, so
//   compute = ceil(tiles x s / SMs) x tile(K / s)       (epilogue in fp32)
//             + max((s x 4 + element bytes) x M x N / HBM bandwidth, one kernel's minimum)
// with the s (1 .. SMs / tiles) that minimises it. Without it, GEMMs of a few
// output tiles and a long K (the H200 sweeps: M, N <= 1024, K up to 16K)
// came out up to 4 times too slow.
//   time    = max(compute, HBM bytes / achievable HBM bandwidth,
//                 FLOPs / the fastest GEMM measured on the GPU)
// The last bound is a measurement, not the model: over a sweep of shapes no
// GEMM beat it, where the model alone lets shapes with long K loops and
// whole waves run up to 7 % faster (the K loop's rate is set by the best
// shape, K = 2048 on A100).
#include <cstdint>
#include <span>

#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
};

struct GemmTile {
  int m = 0, n = 0;
};

// The tiles of cuBLAS's and CUTLASS's kernels for large problems: 256x128, 128x256, 128x128.
std::span<const GemmTile> large_gemm_tiles();

struct GemmTime {
  double seconds = 0;          // max(compute_seconds, memory_seconds, achievable_seconds)
  double compute_seconds = 0;  // waves x per-tile time, for the best tile
  double memory_seconds = 0;   // the HBM traffic at the achievable bandwidth
  double achievable_seconds = 0;  // the FLOPs at the GPU's fastest measured GEMM (0 where none)
  int tile_m = 0, tile_n = 0;  // the tile chosen
  int64_t tiles = 0, waves = 0;
  int split_k = 1;              // the K slices chosen (1: no split)
};

// `bytes` is the GEMM's HBM traffic (inputs and output); `hbm_fraction` the
// share of the spec-sheet HBM bandwidth a streaming kernel achieves;
// `min_kernel_seconds` the shortest a kernel runs (split-K's reduction is
// one). fp8 GEMMs run at the fp8 peak with 1-byte elements, everything else
// at bf16's. The tile and split are the fastest of `tiles` and of the
// splits, as cuBLAS's heuristics roughly pick.
GemmTime gemm_time(const GpuSpec& gpu, GemmShape shape, double bytes, Dtype dtype, double hbm_fraction,
                   double min_kernel_seconds, std::span<const GemmTile> tiles = large_gemm_tiles());

// `groups` GEMMs of one's shape, one kernel each, `streams` of them at once
// (Transformer Engine's GroupedLinear runs a cuBLAS GEMM per expert over its
// 4 compute streams; Megatron's SequentialMLP one after another):
//   rounds  = ceil(groups / streams)
//   waves   = max(rounds x one's waves, ceil(groups x tiles x split / SMs))
//   compute = waves x one's compute / one's waves
// Kernels of fewer tiles than SMs run `streams` at a time beside each other;
// kernels filling the SMs take their waves one after another, however many
// streams (their tiles pooled: a kernel's last wave shares the SMs with the
// next one's first). Bytes and FLOPs add up: time = max(compute, groups x
// one's memory and achievable times, rounds x the shortest kernel).
double grouped_gemm_seconds(const GemmTime& one, int64_t groups, int64_t streams, int sm_count,
                            double min_kernel_seconds);

// The clock a GEMM's K loop runs at: the GPU's sustained tensor clock for
// its data type (fp8's where the GPU has fp8 tensor cores and states one).
double sustained_clock_hz(const GpuSpec& gpu, Dtype dtype);

// The dense tensor-core peak of a data type on the GPU: its fp8 or fp4 peak
// where it has one, else the bf16 peak (fp16 runs at it).
double peak_flops(const GpuSpec& gpu, Dtype dtype);

// Operands and output at the dtype's element size: (MK + KN + MN) x bytes.
double gemm_bytes(GemmShape shape, Dtype dtype);

}  // namespace simtrain
