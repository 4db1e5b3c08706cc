#include "sim/model/gemm_model.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace simtrain {

namespace {

// The guide's examples use 256x128 on A100. One tile resident per SM: a 128x256 tile
// stepping K in blocks of 64 bf16 takes (128 + 256) x 64 x 2 B = 48 KiB of
// shared memory a stage, and CUTLASS's Ampere kernels keep 3 stages in
// flight, 144 KiB of the SM's 164 KiB (A100 whitepaper; 228 KiB on H100).
constexpr std::array<GemmTile, 3> kLargeTiles = {{{256, 128}, {128, 256}, {128, 128}}};

// Global-memory load latency, in SM clocks: 400 on V100, A100 and H100
// (Table 3 of doi:10.1016/j.ultsonch.2023.106546, pmc.ncbi.nlm.nih.gov/articles/PMC10448217).
// A tile's first K block waits this long before its first MMA; the mainloop's
// pipelined loads hide it for every later block, so K cannot amortise it.
constexpr double kMemoryLatencyCycles = 400;

// A problem narrower than a tile runs a kernel whose tile is no wider than
// it, rounded up to the tensor-core instruction's smallest N, 8 (PTX ISA:
// mma.sync m16n8k16 on Ampere, wgmma n8 on Hopper); cuBLAS swaps the operands
// where M is the narrow side, so the same holds for M.
constexpr int64_t kMmaGranule = 8;

// Split-K's partial tiles are fp32, the tensor cores' accumulator.
constexpr double kPartialBytes = 4;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t narrowed(int tile, int64_t dimension) {
  return std::min<int64_t>(tile, ceil_div(dimension, kMmaGranule) * kMmaGranule);
}

}  // namespace

std::span<const GemmTile> large_gemm_tiles() { return kLargeTiles; }

double sustained_clock_hz(const GpuSpec& gpu, Dtype dtype) {
  // No sustained clock under fp4 load is published: fp4 GEMMs take fp8's.
  const bool fp8 = (dtype == Dtype::fp8 || dtype == Dtype::fp4) && gpu.peak_fp8_flops > 0;
  return fp8 && gpu.sustained_fp8_tensor_clock_hz > 0 ? gpu.sustained_fp8_tensor_clock_hz : gpu.sustained_tensor_clock_hz;
}

double gemm_bytes(GemmShape shape, Dtype dtype) {
  const double elements = double(shape.m) * shape.k + double(shape.k) * shape.n + double(shape.m) * shape.n;
  return elements * dtype_bytes(dtype);
}

double peak_flops(const GpuSpec& gpu, Dtype dtype) {
  if (dtype == Dtype::fp4 && gpu.peak_fp4_flops > 0) return gpu.peak_fp4_flops;
  if (dtype == Dtype::fp8 && gpu.peak_fp8_flops > 0) return gpu.peak_fp8_flops;
  return gpu.peak_bf16_flops;
}

double grouped_gemm_seconds(const GemmTime& one, int64_t groups, int64_t streams, int sm_count,
                            double min_kernel_seconds) {
  const int64_t rounds = ceil_div(groups, std::max<int64_t>(1, streams));
  const int64_t waves = std::max(rounds * one.waves, ceil_div(groups * one.tiles * one.split_k, sm_count));
  const double compute_seconds = one.compute_seconds * double(waves) / double(one.waves);
  return std::max({compute_seconds, double(groups) * one.memory_seconds, double(groups) * one.achievable_seconds,
                   double(rounds) * min_kernel_seconds});
}

GemmTime gemm_time(const GpuSpec& gpu, GemmShape shape, double bytes, Dtype dtype, double hbm_fraction,
                   double min_kernel_seconds, std::span<const GemmTile> tiles) {
  const bool fp4 = dtype == Dtype::fp4 && gpu.peak_fp4_flops > 0;
  const bool fp8 = dtype == Dtype::fp8 && gpu.peak_fp8_flops > 0;
  const double clock_hz = sustained_clock_hz(gpu, fp4 || fp8 ? Dtype::fp8 : Dtype::bf16);
  const double sm_flops = peak_flops(gpu, dtype) * (clock_hz / gpu.tensor_clock_hz) / gpu.sm_count;
  const double hbm_bytes_per_second = gpu.hbm_bytes_per_second * hbm_fraction;
  const double prologue_seconds = kMemoryLatencyCycles / clock_hz;

  GemmTime best;
  best.compute_seconds = std::numeric_limits<double>::infinity();
  const double outputs = double(shape.m) * shape.n;
  for (const GemmTile& tile : tiles) {
    const int64_t tile_m = narrowed(tile.m, shape.m), tile_n = narrowed(tile.n, shape.n);
    const int64_t tile_count = ceil_div(shape.m, tile_m) * ceil_div(shape.n, tile_n);
    const double tile_outputs = double(tile_m) * tile_n;
    const int64_t max_split = std::max<int64_t>(1, gpu.sm_count / tile_count);
    for (int64_t split = 1; split <= max_split; ++split) {
      const int64_t waves = ceil_div(tile_count * split, gpu.sm_count);
      // Every SM of a wave writes its tile at the end of it (in fp32 where split): the wave's output over HBM.
      const double output_bytes = split > 1 ? kPartialBytes : dtype_bytes(dtype);
      const double epilogue_seconds = tile_outputs * output_bytes * gpu.sm_count / hbm_bytes_per_second;
      const double mainloop_seconds = 2 * tile_outputs * (double(shape.k) / split) / sm_flops;
      const double reduction_seconds =
          split > 1 ? std::max((split * kPartialBytes + dtype_bytes(dtype)) * outputs / hbm_bytes_per_second,
                               min_kernel_seconds)
                    : 0;
      const double compute_seconds = waves * (prologue_seconds + mainloop_seconds + epilogue_seconds) + reduction_seconds;
      if (compute_seconds < best.compute_seconds) {
        best.compute_seconds = compute_seconds;
        best.tile_m = int(tile_m), best.tile_n = int(tile_n), best.tiles = tile_count, best.waves = waves;
        best.split_k = int(split);
      }
    }
  }
  best.memory_seconds = bytes / hbm_bytes_per_second;
  // No fp4 matmul sweep is published: fp4 GEMMs are bounded by the model alone.
  const double achievable_flops = fp4 ? 0 : fp8 ? gpu.achievable_matmul_fp8_flops : gpu.achievable_matmul_bf16_flops;
  if (achievable_flops > 0) best.achievable_seconds = 2.0 * shape.m * shape.n * shape.k / achievable_flops;
  best.seconds = std::max({best.compute_seconds, best.memory_seconds, best.achievable_seconds});
  return best;
}

}  // namespace simtrain
