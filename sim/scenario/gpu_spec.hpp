#pragma once
// What the cost model needs to know about a GPU: its spec sheet.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

struct GpuSpec {
  std::string name;
  double peak_bf16_flops = 0;  // dense tensor-core FLOP/s; fp16 is the same on these parts
  double peak_fp8_flops = 0;   // 0 where the GPU has no fp8 tensor cores
  double hbm_bytes_per_second = 0;
  double memory_bytes = 0;
};

// The built-in table: A100-80GB, H100-SXM, H200 (spec-sheet figures).
const std::vector<GpuSpec>& builtin_gpus();
// A built-in name, or a JSON object with the GpuSpec fields. Throws InputError.
GpuSpec gpu_from_json(const nlohmann::json& value, const std::string& file, const std::string& field);

}  // namespace simtrain
