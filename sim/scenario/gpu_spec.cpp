#include "sim/scenario/gpu_spec.hpp"

#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

namespace simtrain {

namespace {
constexpr double GiB = 1024.0 * 1024 * 1024;
}

// Spec-sheet figures (dense tensor-core peaks): bf16, HBM and memory as in
// tests/validation/hardware.json; fp8 from NVIDIA's H100 and H200 datasheets.
const std::vector<GpuSpec>& builtin_gpus() {
  static const std::vector<GpuSpec> gpus = {
      {"A100-80GB", 312e12, 0, 2039e9, 80 * GiB},
      {"H100-SXM", 989e12, 1979e12, 3350e9, 80 * GiB},
      {"H200", 989e12, 1979e12, 4800e9, 141 * GiB},
  };
  return gpus;
}

GpuSpec gpu_from_json(const nlohmann::json& value, const std::string& file, const std::string& field) {
  if (value.is_string()) {
    for (const GpuSpec& gpu : builtin_gpus())
      if (gpu.name == value.get<std::string>()) return gpu;
    std::string names;
    for (const GpuSpec& gpu : builtin_gpus()) names += (names.empty() ? "" : ", ") + gpu.name;
    throw InputError(file, field, "unknown GPU '" + value.get<std::string>() + "' (known: " + names + ")");
  }
  JsonFields fields(value, file, field + ".");
  GpuSpec gpu;
  gpu.name = fields.text("name").value_or("custom");
  gpu.peak_bf16_flops = fields.required_number("peak_bf16_tflops", 1e-3) * 1e12;
  gpu.peak_fp8_flops = fields.number("peak_fp8_tflops").value_or(0) * 1e12;
  gpu.hbm_bytes_per_second = fields.required_number("hbm_GBps", 1e-3) * 1e9;
  gpu.memory_bytes = fields.required_number("memory_GiB", 1e-3) * GiB;
  fields.reject_unknown();
  return gpu;
}

}  // namespace simtrain
