#pragma once
// What the cost model needs to know about a GPU: its spec sheet, and what
// the GEMM model (sim/model/gemm_model.hpp) needs about its SMs.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

// Where a GPU's sustained tensor clock comes from, first that exists
// (docs/gpus.md, "The method").
enum class ComputeProvenance {
  measured,             // a kernel profile measured on that GPU under sustained load
  published_sustained,  // published sustained-load measurements of that GPU
  layer_calibrated,     // one published layer-level measurement of that GPU
  carried_over,         // a measured GPU's mechanism carried over by physical inputs
  spec_sheet,           // spec sheet and short-burst ceilings only
  scenario,             // given by the scenario file
};
std::string to_string(ComputeProvenance provenance);

struct GpuSpec {
  std::string name;
  double peak_bf16_flops = 0;  // dense tensor-core FLOP/s; fp16 is the same on these parts
  double peak_fp8_flops = 0;   // 0 where the GPU has no fp8 tensor cores
  double hbm_bytes_per_second = 0;
  double memory_bytes = 0;
  int sm_count = 0;            // streaming multiprocessors: GEMM tiles run in waves of this many
  double tensor_clock_hz = 0;  // the clock the tensor peaks are computed at (peak = SMs x FLOP/clock/SM x clock)
  // The clock the GPU holds under dense tensor-core load at its power limit:
  // a GEMM's K loop runs at peak x sustained / tensor clock.
  double sustained_tensor_clock_hz = 0;
  // The same under fp8 tensor-core load, which draws more power per clock;
  // 0: the bf16 figure.
  double sustained_fp8_tensor_clock_hz = 0;
  // The fastest GEMM measured on this GPU over a sweep of shapes ("Maximum
  // Achievable Matmul FLOPS"): no GEMM of any shape runs faster. 0 where none
  // was measured (the GEMM model alone bounds it).
  double achievable_matmul_bf16_flops = 0;
  double achievable_matmul_fp8_flops = 0;
  // USD per GPU-hour of on-demand rental: the cost figures' price where the
  // scenario states none (cluster.price_per_gpu_hour, search --price). 0: none known.
  double rental_usd_per_gpu_hour = 0;
  ComputeProvenance compute_provenance = ComputeProvenance::scenario;
  // The measurement or publication the sustained clock comes from, in a few words.
  std::string compute_source;
  // Dense fp4 (NVFP4) tensor-core FLOP/s; 0 where the GPU has no fp4 tensor
  // cores. A GPU with them has block-scaled tensor cores (Blackwell's), which
  // MXFP8 and NVFP4 training need. fp4 GEMMs run at the fp8 sustained clock.
  double peak_fp4_flops = 0;
  // The share of hbm_bytes_per_second memory-bound kernels reach (element-wise,
  // norms, softmax, optimizer; a GEMM's operands and output): docs/gpus.md.
  // 0: H200's measured copy (RooflineEfficiency::memory in sim/model/cost_model.hpp).
  double hbm_efficiency = 0;
};

// The built-in table: A100-80GB, H100-SXM, H200, H800, B200, GB200, MI300X (spec-sheet figures).
const std::vector<GpuSpec>& builtin_gpus();
// The built-in GPU of that name, or null.
const GpuSpec* builtin_gpu(const std::string& name);
// A built-in name, or a JSON object with the GpuSpec fields (every one
// required but name, peak_fp8_tflops, peak_fp4_tflops, the achievable matmul
// rates and rental_usd_per_gpu_hour). Throws InputError naming the field.
GpuSpec gpu_from_json(const nlohmann::json& value, const std::string& file, const std::string& field);

}  // namespace simtrain
