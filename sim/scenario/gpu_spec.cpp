#include "sim/scenario/gpu_spec.hpp"

#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

namespace simtrain {

namespace {
constexpr double GiB = 1024.0 * 1024 * 1024;

// A figure that cannot exceed another of the same GPU (a sustained clock, an achievable rate).
void require_at_most(JsonFields& fields, const std::string& key, double value, const std::string& limit_key,
                     double limit) {
  if (value > limit)
    fields.fail(key, "must be at most " + limit_key + " (" + fields.raw(limit_key).dump() + "), got " +
                         fields.raw(key).dump());
}
}  // namespace

// Spec-sheet figures (dense tensor-core peaks): bf16, HBM and memory as in
// tests/validation/hardware.json; fp8 from NVIDIA's H100 and H200 datasheets.
// SMs and tensor clocks: NVIDIA's A100 and H100 whitepapers, as checked in
// forums.developer.nvidia.com/t/how-to-calculate-the-tensor-core-fp16-performance-of-h100/244727
// (A100: 108 SMs x 2048 FLOP/clock x 1410 MHz = 312 TFLOP/s) and
// glennklockwood.com/garden/peak-FLOPS (H100 SXM: 132 SMs x 4096 x 1830 MHz =
// 989.4 TFLOP/s); H200 is the same GH100 die, SM count and 700 W limit with other HBM.
// Sustained tensor clock (docs/gpus.md: the method, and each GPU's source):
// A100 1067 MHz, calibrated on one published layer-level measurement of an
// A100, as no kernel profile or sustained-load GEMM figure of one exists
// here: Korthikanti et al. 2022 (arXiv 2205.05198), Table 4, the 22B model's
// layer at TP 8 without recompute, 7.7 ms forward + 11.9 ms backward
// (tests/validation/korthikanti_2022.json). 1067 MHz is the clock at which
// the model gives that layer's compute the published time less its blocking
// TP all-reduces (derive_sustained_clock_hz_from_layer in
// sim/model/kernel_calibration.hpp; tests/test_gpu_calibration.cpp holds this
// figure to it). It was 1305 MHz, the clock NVIDIA states an A100 holds at
// its power limit running HPL (glennklockwood.com/garden/peak-FLOPS,
// "Rpeak"): a real clock, but without cuBLAS's K-loop efficiency at it,
// which H200's measurement showed (below), and every A100 row was 12-19 %
// too fast. The end-to-end A100 rows (bench/validation.cpp) check it and set nothing.
// H200: measured on this project's H200 (kernels/measured/, 2026-12-04). Under
// sustained GEMM load the GPU sits at its 700 W limit and its SM clock falls
// from 1980 MHz to 1335-1545 MHz (nvidia-smi every 0.5 s:
// kernels/measured/H200-profile-clocks.csv), and GEMMs of every large shape
// (M, N, K >= 4096) run at a median 658 TFLOP/s in bf16 (27 GEMMs of
// kernels/measured/H200-sweep-bf16.json) and 1,207 in fp8 (39 GEMMs of
// H200-sweep-fp8.json; cuBLASLt, each timed for 0.2 s back to back after L2
// flushes), well below the short bursts of the matmul sweeps below (794.5
// and 1,453.4: a few timed products a shape). 1288 MHz (bf16) and 1178 MHz
// (fp8: twice the operations a clock, more power a clock) are the clocks at
// which the GEMM model gives those medians
// (`simtrain_bench_roofline_accuracy --derive`; tests/test_gemm_model.cpp
// checks them against the files). Being below the clocks nvidia-smi reads,
// they also hold what the model's K loop at full rate leaves out (the
// kernels' own efficiency). H100 SXM and H800: carried over from H200
// (carried_over_sustained_clock_hz: the same fractions, 0.704 and 0.644, of
// the same 1830 MHz tensor clock), the same GH100 die and SMs at the same
// 700 W limit (their HBM3 is slower; their GEMMs, compute-bound, are not
// measured here). tests/test_gpu_calibration.cpp holds every carried-over
// clock to that function.
// Achievable matmul FLOP/s, the fastest GEMM of a sweep of shapes (mamf-finder,
// github.com/stas00/ml-engineering): bf16 A100 SXM 267.9 and H100 SXM 792.1
// (compute/accelerator/README.md), H100/H200 SXM 794.5 and fp8 H200 SXM 1453.4
// (73.4 % of the fp8 peak, against 80.3 % for bf16; the guide "When Is It
// Worth Upgrading GPUs?"); fp8 H100 SXM 1402.6 (70.9 %, torch 2.7.0+cu126, the
// same README's later fp8 table). A100 keeps the earlier 267.9 of an older
// software stack (the table now gives 271.2 with torch 2.6): the A100 rows
// this project checks ran on 2021-22 software.
// These are short bursts: under sustained load the A100's GEMMs run below
// 267.9 (218-223 TFLOP/s for the large GEMMs of the calibration layer), as
// H200's ran below its 794.5.
// H800 (SXM): the H100 SXM's GH100 die, SMs, clocks, tensor peaks (bf16
// 1,979 and fp8 3,958 TFLOP/s with sparsity, so 989 and 1,979 dense), 80 GB
// of HBM3 at 3.35 TB/s, with NVLink cut to 400 GB/s (NVIDIA's H800 Tensor
// Core GPU datasheet); the NVLink figure lives in its topology
// (topologies/h800-ib-fat-tree.json). No matmul sweep of an H800 is
// published: the H100 SXM's, the same silicon at the same clocks.
// B200 (HGX B200, 1,000 W): dense bf16 2,250 and fp8 4,500 TFLOP/s (NVIDIA's
// HGX B200 figures: 4.5 and 9 PFLOP/s with sparsity; per GPU in the tables of
// glennklockwood.com/garden/processors/B200), 8 TB/s of HBM3e, 180 GB of it
// per GPU (DGX B200 datasheet: 1,440 GB for 8 GPUs; 192 GB is the B200
// package's figure), taken as GiB as the others. 148 SMs (74 of 80
// per die: Chips and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut
// Rolling", 2025). NVIDIA publishes no tensor clock: 1856 MHz is the clock at
// which 148 SMs at 8,192 dense bf16 FLOP/clock (twice Hopper's 4,096) give the
// 2,250 TFLOP/s peak. No sustained-load GEMM or clock of a B200 is published
// that this project found, so its sustained clocks are H200's carried over:
// the same fractions of its tensor clock, 1306 MHz bf16 and 1195 fp8
// (carried_over_sustained_clock_hz; docs/gpus.md says why and what it
// assumes: a power limit sized to the tensor peak as H200's, 0.44 W per
// dense bf16 TFLOP/s at 1,000 W against H200's 0.71, which holds only if
// Blackwell's energy per FLOP is lower by as much). The measured short-burst
// matmul ceilings still bound every GEMM: mamf-finder bf16 1,745.0 (77.6 %
// of peak) and fp8 3,432.5 TFLOP/s (76.3 %), B200 SXM
// (github.com/stas00/ml-engineering, the guide "When Is It Worth Upgrading
// GPUs?"); at the carried-over clock the model's largest GEMMs run below
// them, as H200's measured ones ran at 0.83 of its ceiling. NVLink 5's 1.8 TB/s bidirectional lives in its topology
// (topologies/dgx-b200-superpod.json).
// GB200 (one Blackwell GPU of a GB200 NVL72, NVIDIA's GB200 NVL72 product
// page, nvidia.com/en-us/data-center/gb200-nvl72): the rack's 360 PFLOP/s
// bf16 and 720 PFLOP/s fp8 (with sparsity) over its 72 GPUs, halved for
// dense: 2,500 and 5,000 TFLOP/s; its 13.4 TB of HBM3e at 576 TB/s: 186 GB
// (taken as GiB as the others) at 8 TB/s per GPU (some accounts of the
// page give 13.5 TB, 192 GB per GPU). NVIDIA publishes no SM count for it:
// 148 SMs is assumed, the B200's (the same Blackwell silicon, at a higher
// peak); with 8,192 dense bf16 FLOP/clock they give the 2,500 TFLOP/s peak
// at 2062 MHz, which is the device-reported maximum SM clock of a GB200
// (stas00/ml-engineering, compute/accelerator/README.md, "Clock speed").
// Sustained clocks: H200's carried over as for B200, 1451 MHz bf16 and 1327
// fp8 (its limit is configurable up to 1,200 W: 0.48 W per dense bf16
// TFLOP/s). Matmul ceilings measured there
// (mamf-finder, torch 2.10.0.dev20250916+cu130): bf16 1,822.0 TFLOP/s
// (72.9 % of peak) and fp8 3,615.6 (72.3 %). NVLink 5 across the rack
// (900 GB/s per GPU per direction) lives in
// topologies/dgx-gb200-nvl72-superpod.json.
// MI300X (AMD Instinct MI300X data sheet, amd.com): dense bf16 1,307.4 and
// fp8 2,614.9 TFLOP/s, 192 GB of HBM3 at 5.3 TB/s, 304 compute units, peak
// engine clock 2100 MHz (304 CUs x 2,048 dense bf16 FLOP/clock x 2100 MHz =
// 1,307.4 TFLOP/s); the GEMM model counts CUs as SMs. Sustained clocks from
// AMD's published sustained-load GEMMs ("Measuring Max-Achievable FLOPs -
// Part 2", rocm.blogs.amd.com, 28 Feb 2025, Table 1: hipBLASLt, each GEMM run
// for 1 s after warm-up, normally distributed inputs, cold caches, clocks read
// by hipBLASLt-bench): bf16 708 TFLOP/s at 4096x4864x32896 (median clock
// 1207 MHz) and fp8 1,273 at 4096x3648x32896 (1230 MHz), each shape one wave
// of one tile per CU (16 x 19 tiles of 256x256 and 256x192). 1143 MHz (bf16)
// and 1027 MHz (fp8) are the clocks at which the GEMM model gives those rates
// with those tiles (derive_sustained_clock_hz_from_gemm;
// tests/test_gpu_calibration.cpp): 0.95 and 0.83 of the clocks AMD read, the
// rest the kernels' own efficiency (AMD: "up to 94 %"). It was 1400 MHz,
// fitted to mamf-finder's short-burst best, bf16 781.9 TFLOP/s at
// 4096x10240x4864 (60.1 % of peak, ROCm 6.2; github.com/stas00/ml-engineering,
// compute/accelerator/README.md), which still bounds every bf16 GEMM. No fp8
// sweep of an MI300X is published there: fp8 GEMMs are bounded by the model alone. Infinity Fabric (7 links
// of 64 GB/s per direction to the other 7 GPUs of a node) lives in its
// topology (topologies/mi300x-ib-fat-tree.json).
// HBM efficiency, the share of the spec-sheet bandwidth memory-bound kernels
// reach (docs/gpus.md, "Memory-bound kernels"): H200's is measured here, a
// device-to-device copy at 4.3 of 4.8 TB/s (RooflineEfficiency::memory, the
// figure of every GPU that states 0: H200, B200, GB200). A100, H100 (and
// H800, the same 80 GB of HBM3 at 3.35 TB/s) and MI300X take the
// BabelStream Copy of the Azure AI Benchmarking Guide (github.com/Azure/
// AI-benchmarking-guide, Azure_Results/ND_*_results.md, "HBM Bandwidth";
// Benchmarks/NVIDIA/HBMBandwidth.py runs BabelStream's cuda-stream), which
// measured H200 too: A100-SXM4-80GB 1.61, H100 80GB 2.90, MI300X 4.11 and
// H200 4.01 TB/s. Each is H200's measured share times its published share
// over H200's published one (4.01 of 4.8), the benchmark's own level left
// out: A100 0.847, H100 0.928, MI300X 0.832
// (hbm_efficiency_from_published_copy in sim/model/kernel_calibration.hpp;
// tests/test_gpu_calibration.cpp). No HBM figure of a B200 or GB200 is
// published there (the GB200 page gives the Grace CPU's STREAM only).
// Rental price: the middle of the "specialty" providers' on-demand range
// (Lambda, CoreWeave, Crusoe...: A100 80GB $1.10-1.50, H100 SXM5 $2.50-3.50,
// H200 SXM5 $3.50-4.50 per GPU-hour; hyperscalers charge about 1.5x, long-tail
// providers 0.7x) in the Mercatus GPU Index of May 2026
// (mercatus-ai.com/blog/cloud-gpu-pricing). Prices move: a default, not a quote.
// That index gives no B200, GB200 or MI300X range; from other accounts of
// the same months, each said for what it is:
// - B200 $5.25: the middle of the specialised clouds' on-demand average,
//   $4.50-6.00 per GPU-hour (Lyceum Technologies, "NVIDIA B200 GPU Cloud
//   Pricing 2026", 11 March 2026; hyperscalers more).
// - GB200 $4.54: one provider's on-demand listing, $9.08 per GB200 Superchip
//   of two GPUs (Spheron, 17 March 2026), as no range is published; NVL72
//   racks are mostly rented whole, under contract.
// - MI300X $1.70: the middle of the specialised clouds' on-demand listings,
//   TensorWave $1.50 to Vultr $1.85 (Cliff Center research note "AMD
//   inference economics", 18 May 2026; Azure and Oracle list $6).
// The H800 (sold in China only) has none: its costs are in GPU-hours (or --price).
// fp4 peaks (dense NVFP4 tensor-core FLOP/s; the GPUs without one have no
// block-scaled tensor cores, so neither fp4 nor mxfp8 training): B200 9,000,
// half the 18 PFLOP/s "with sparsity" per GPU of NVIDIA's HGX B200 table
// (144 PFLOP/s for 8 GPUs); GB200 10,000, half the GB200 NVL72 page's
// 1,440 PFLOP/s with sparsity over 72 GPUs (20 per GPU). Both are twice
// their fp8 peaks. No clock under fp4 load is published: fp4 GEMMs run at the
// fp8 sustained clock (sim/model/gemm_model.cpp), and no fp4 matmul sweep
// bounds them.
std::string to_string(ComputeProvenance provenance) {
  switch (provenance) {
    case ComputeProvenance::measured: return "measured";
    case ComputeProvenance::published_sustained: return "published sustained-load figures";
    case ComputeProvenance::layer_calibrated: return "calibrated on one published layer";
    case ComputeProvenance::carried_over: return "carried over";
    case ComputeProvenance::spec_sheet: return "spec sheet";
    case ComputeProvenance::scenario: return "given by the scenario";
  }
  return "unknown";
}

const std::vector<GpuSpec>& builtin_gpus() {
  static const std::vector<GpuSpec> gpus = {
      {"A100-80GB", 312e12, 0, 2039e9, 80 * GiB, 108, 1410e6, 1067e6, 0, 267.9e12, 0, 1.30,
       ComputeProvenance::layer_calibrated, "Korthikanti et al. 2022 Table 4, the 22B layer", 0, 0.847},
      {"H100-SXM", 989e12, 1979e12, 3350e9, 80 * GiB, 132, 1830e6, 1288e6, 1178e6, 792.1e12, 1402.6e12, 3.00,
       ComputeProvenance::carried_over, "H200's measured clocks, the same GH100 die at 700 W", 0, 0.928},
      {"H200", 989e12, 1979e12, 4800e9, 141 * GiB, 132, 1830e6, 1288e6, 1178e6, 794.5e12, 1453.4e12, 4.00,
       ComputeProvenance::measured, "kernels/measured/H200-sweep-*.json, 2026-12-04"},
      {"H800", 989e12, 1979e12, 3350e9, 80 * GiB, 132, 1830e6, 1288e6, 1178e6, 792.1e12, 1402.6e12, 0,
       ComputeProvenance::carried_over, "H200's measured clocks, the same GH100 die at 700 W", 0, 0.928},
      {"B200", 2250e12, 4500e12, 8000e9, 180 * GiB, 148, 1856e6, 1306e6, 1195e6, 1745.0e12, 3432.5e12, 5.25,
       ComputeProvenance::carried_over, "H200's measured clocks as fractions of the tensor clock",
       9000e12},  // fp4: "fp4 peaks" above
      {"GB200", 2500e12, 5000e12, 8000e9, 186 * GiB, 148, 2062e6, 1451e6, 1327e6, 1822.0e12, 3615.6e12, 4.54,
       ComputeProvenance::carried_over, "H200's measured clocks as fractions of the tensor clock",
       10000e12},  // fp4: "fp4 peaks" above
      {"MI300X", 1307.4e12, 2614.9e12, 5300e9, 192 * GiB, 304, 2100e6, 1143e6, 1027e6, 781.9e12, 0, 1.70,
       ComputeProvenance::published_sustained, "AMD's Max-Achievable FLOPs, 1 s hipBLASLt runs", 0, 0.832},
  };
  return gpus;
}

const GpuSpec* builtin_gpu(const std::string& name) {
  for (const GpuSpec& gpu : builtin_gpus())
    if (gpu.name == name) return &gpu;
  return nullptr;
}

GpuSpec gpu_from_json(const nlohmann::json& value, const std::string& file, const std::string& field) {
  if (value.is_string()) {
    if (const GpuSpec* gpu = builtin_gpu(value.get<std::string>())) return *gpu;
    std::string names;
    for (const GpuSpec& gpu : builtin_gpus()) names += (names.empty() ? "" : ", ") + gpu.name;
    throw InputError(file, field, "unknown GPU '" + value.get<std::string>() + "' (known: " + names + ")");
  }
  JsonFields fields(value, file, field + ".");
  GpuSpec gpu;
  gpu.name = fields.text("name").value_or("custom");
  gpu.peak_bf16_flops = fields.required_number("peak_bf16_tflops", 1e-3) * 1e12;
  gpu.peak_fp8_flops = fields.number("peak_fp8_tflops").value_or(0) * 1e12;
  gpu.peak_fp4_flops = fields.number("peak_fp4_tflops").value_or(0) * 1e12;
  gpu.hbm_bytes_per_second = fields.required_number("hbm_GBps", 1e-3) * 1e9;
  gpu.memory_bytes = fields.required_number("memory_GiB", 1e-3) * GiB;
  gpu.sm_count = int(fields.required_integer("sm_count", 1));
  gpu.tensor_clock_hz = fields.required_number("tensor_clock_MHz", 1) * 1e6;
  gpu.sustained_tensor_clock_hz = fields.required_number("sustained_tensor_clock_MHz", 1) * 1e6;
  require_at_most(fields, "sustained_tensor_clock_MHz", gpu.sustained_tensor_clock_hz, "tensor_clock_MHz",
                  gpu.tensor_clock_hz);
  gpu.sustained_fp8_tensor_clock_hz = fields.number("sustained_fp8_tensor_clock_MHz", 1).value_or(0) * 1e6;
  require_at_most(fields, "sustained_fp8_tensor_clock_MHz", gpu.sustained_fp8_tensor_clock_hz, "tensor_clock_MHz",
                  gpu.tensor_clock_hz);
  gpu.achievable_matmul_bf16_flops = fields.number("achievable_matmul_bf16_tflops", 1e-3).value_or(0) * 1e12;
  gpu.achievable_matmul_fp8_flops = fields.number("achievable_matmul_fp8_tflops", 1e-3).value_or(0) * 1e12;
  require_at_most(fields, "achievable_matmul_bf16_tflops", gpu.achievable_matmul_bf16_flops, "peak_bf16_tflops",
                  gpu.peak_bf16_flops);
  require_at_most(fields, "achievable_matmul_fp8_tflops", gpu.achievable_matmul_fp8_flops, "peak_fp8_tflops",
                  gpu.peak_fp8_flops);
  gpu.rental_usd_per_gpu_hour = fields.number("rental_usd_per_gpu_hour", 0).value_or(0);
  gpu.hbm_efficiency = fields.number("hbm_efficiency", 0).value_or(0);
  if (gpu.hbm_efficiency > 1) fields.fail("hbm_efficiency", "must be at most 1, got " + fields.raw("hbm_efficiency").dump());
  gpu.compute_source = file + ", " + field;
  fields.reject_unknown();
  return gpu;
}

}  // namespace simtrain
