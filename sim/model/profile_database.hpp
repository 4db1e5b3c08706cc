#pragma once
// A kernel-profile database: compute ops timed on one real GPU by the
// profiler (kernels/, `simtrain profile`), read back with validation.
//
// Format (JSON): {"format": "simtrain-kernel-profile", "version": 1,
//   "device": {"name": "NVIDIA H100 80GB HBM3", ...}, "entries": [{"op": "qkv",
//   "op_class": "gemm", "shape": [2048, 4608, 12288], "dtype": "bf16",
//   "flops": ..., "bytes": ..., "median_seconds": ..., ...}, ...], ...}
// kernels/README.md documents every field.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/workload.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct ProfileEntry {
  Op op;                 // name, class, shape, FLOPs and bytes as the Workload gives them
  Dtype dtype = Dtype::bf16;
  std::string kernel;    // what ran, for people: "cublasLt gemm", "elementwise 2 bytes/element", ...
  double median_seconds = 0;
  double p10_seconds = 0;
  double p90_seconds = 0;
  int64_t repetitions = 0;
};

struct ProfileDatabase {
  std::string source;       // the file it was read from, for messages
  std::string device_name;  // as CUDA names the GPU it was measured on
  std::vector<ProfileEntry> entries;
};

inline constexpr const char* kProfileFormat = "simtrain-kernel-profile";
inline constexpr int kProfileVersion = 1;

nlohmann::json to_json(const ProfileEntry& entry);

// Throws InputError naming the file, the field and the reason: malformed
// JSON, a missing or mistyped field, a time that is not positive.
ProfileDatabase parse_profile_database(const nlohmann::json& document, const std::string& source);
ProfileDatabase load_profile_database(const std::string& path);

// Whether a CUDA device name and a simtrain GPU name are the same part. Both
// are split into words at anything but letters and digits, and "NVIDIA"
// dropped; the first word holding a digit that is not a memory size is the
// model (H100, A100, H200). The models must be equal and, where both names
// state them, so must the form factor (SXM, PCIe, NVL) and the memory size
// (80GB): "NVIDIA H100 80GB HBM3" is H100-SXM, "NVIDIA H100 PCIe" is not.
// Names without a model word must be equal, ignoring case and punctuation.
bool same_gpu(const std::string& device_name, const std::string& gpu_name);

// Throws InputError unless `database` was measured on `gpu` (same_gpu).
void check_measured_on(const ProfileDatabase& database, const GpuSpec& gpu);

}  // namespace simtrain
