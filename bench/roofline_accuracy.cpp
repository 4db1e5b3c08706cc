// How far the roofline cost model is from measured kernel times: for every
// entry of a kernel-profile database, (roofline - measured) / measured, and
// per op class the median and the worst of its magnitude (and for GEMMs of
// fewer 128 x 128 output tiles than SMs, where split-K may run).
//   simtrain_bench_roofline_accuracy kernels/profiles/H100-SXM.json [--gpu H100-SXM] [--entries] [--derive]
// --entries also prints every entry: measured and modelled times, the rate
// the kernel reached (TFLOP/s for GEMMs and attention, TB/s of its bytes for
// the rest) and, for GEMMs, the tile, waves and K split the GEMM model chose.
// --derive also prints the figures the cost model takes from such a database
// (sim/model/kernel_calibration.hpp): per data type, the sustained tensor
// clock at which the GEMM model gives its large GEMMs' median time; fused
// attention's forward and backward efficiencies.
// The GPU whose spec sheet the roofline uses is the built-in one the
// database's device matches (same_gpu), unless --gpu names one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/base/median.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/gemm_model.hpp"
#include "sim/model/kernel_calibration.hpp"
#include "sim/model/profile_database.hpp"

namespace {

using namespace simtrain;

const GpuSpec* find_gpu(const std::string& name, bool device_name) {
  for (const GpuSpec& gpu : builtin_gpus())
    if (device_name ? same_gpu(name, gpu.name) : gpu.name == name) return &gpu;
  return nullptr;
}

// A GEMM's output tiles of 128 x 128: fewer than the SMs, cuBLAS splits K.
int64_t output_tiles_128(const Op& gemm) {
  return (gemm.shape.at(0) + 127) / 128 * ((gemm.shape.at(1) + 127) / 128);
}

struct Error {
  double relative = 0;  // (roofline - measured) / measured
  std::string op;
};

std::string describe(const ProfileEntry& entry) {
  std::string text = entry.op.name + " ";
  for (size_t i = 0; i < entry.op.shape.size(); ++i) text += (i ? "x" : "") + std::to_string(entry.op.shape[i]);
  return text + " " + to_string(entry.dtype);
}

std::string fmt_rate(double value, const char* unit) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", value, unit);
  return text;
}

void print_row(const std::string& label, std::vector<Error> errors) {
  std::sort(errors.begin(), errors.end(),
            [](const Error& a, const Error& b) { return std::abs(a.relative) < std::abs(b.relative); });
  std::vector<double> magnitudes;
  for (const Error& e : errors) magnitudes.push_back(std::abs(e.relative));
  std::printf("%-14s %6zu %14.1f %%   %+8.1f %%  (%s)\n", label.c_str(), errors.size(), 100 * median(magnitudes),
              100 * errors.back().relative, errors.back().op.c_str());
}

void print_entry(const ProfileEntry& entry, double modelled_seconds, const GpuSpec& gpu) {
  const double measured = entry.median_seconds;
  std::string rate = entry.op.flops > 0 ? fmt_rate(entry.op.flops / measured / 1e12, "TFLOP/s")
                                        : fmt_rate(entry.op.bytes / measured / 1e12, "TB/s");
  std::string model_detail;
  if (entry.op.op_class == OpClass::gemm) {
    const GemmShape shape{entry.op.shape.at(0), entry.op.shape.at(1), entry.op.shape.at(2)};
    const GemmTime t = gemm_time(gpu, shape, entry.op.bytes, op_dtype(entry.op, entry.dtype), RooflineEfficiency{}.memory,
                                 RooflineEfficiency{}.min_kernel_seconds);
    model_detail = "tile " + std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n) + ", " +
                   std::to_string(t.waves) + " waves, " +
                   (t.split_k > 1 ? "K split " + std::to_string(t.split_k) + " ways, " : "") + "bound by " +
                   (t.seconds == t.compute_seconds ? "tiles" : t.seconds == t.memory_seconds ? "HBM" : "best GEMM");
  }
  std::printf("%-52s %10.4f %10.4f %+8.1f %%  %-16s %s\n", describe(entry).c_str(), 1e3 * measured,
              1e3 * modelled_seconds, 100 * (modelled_seconds / measured - 1), rate.c_str(), model_detail.c_str());
}

void print_derived(const ProfileDatabase& database, const GpuSpec& gpu) {
  std::printf("\nderived from %s (sim/model/kernel_calibration.hpp), against %s's built-in figures:\n",
              database.source.c_str(), gpu.name.c_str());
  for (const Dtype dtype : {Dtype::bf16, Dtype::fp8}) {
    const LargeGemmFit fit = fit_large_gemms(database, gpu, dtype);
    if (fit.gemms == 0) continue;
    std::printf("  %s GEMMs with M, N, K >= %lld: %d, median %.1f TFLOP/s; the model at %.0f MHz gives a median "
                "%+.1f %%; it gives their median at %.0f MHz\n",
                to_string(dtype).c_str(), (long long)kLargeGemmDimension, fit.gemms, fit.median_measured_flops / 1e12,
                sustained_clock_hz(gpu, dtype) / 1e6, 100 * (fit.median_model_ratio - 1),
                derive_sustained_clock_hz(database, gpu, dtype) / 1e6);
  }
  const RooflineEfficiency built_in;
  for (const int64_t head_dim : {64, 128}) {
    const AttentionFit fit = fit_attention(database, gpu, head_dim);
    if (fit.forward_entries + fit.backward_entries == 0) continue;
    std::printf("  fused attention, head_dim %lld, >= %lld tokens: forward %.3f of the bf16 peak (%d entries), "
                "backward %.3f (%d); built in: %.2f and %.2f\n",
                (long long)head_dim, (long long)kLongSequence, fit.forward_efficiency, fit.forward_entries,
                fit.backward_efficiency, fit.backward_entries, built_in.attention_forward, built_in.attention_backward);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool entries = std::erase(args, "--entries") > 0;
  const bool derive = std::erase(args, "--derive") > 0;
  if (args.size() != 1 && !(args.size() == 3 && args[1] == "--gpu")) {
    std::fprintf(stderr, "usage: %s <kernel-profile.json> [--gpu NAME] [--entries] [--derive]\n", argv[0]);
    return 2;
  }
  try {
    const ProfileDatabase database = load_profile_database(args[0]);
    const GpuSpec* gpu = args.size() == 3 ? find_gpu(args[2], false) : find_gpu(database.device_name, true);
    if (!gpu)
      throw InputError(args[0], "device.name",
                       "no built-in GPU matches '" + database.device_name + "'; name one with --gpu");
    const RooflineModel roofline(*gpu);
    std::map<std::string, std::vector<Error>> by_class;
    std::vector<Error> all;
    if (entries)
      std::printf("%-52s %10s %10s %10s  %-16s %s\n", "entry", "measured", "model", "error", "measured rate",
                  "GEMM model");
    for (const ProfileEntry& entry : database.entries) {
      const double predicted = roofline.op_time(entry.op, entry.dtype).seconds;
      if (entries) print_entry(entry, predicted, *gpu);
      const Error error{predicted / entry.median_seconds - 1, describe(entry)};
      by_class[to_string(entry.op.op_class)].push_back(error);
      if (entry.op.op_class == OpClass::gemm && output_tiles_128(entry.op) < gpu->sm_count)
        by_class["gemm < 1 wave"].push_back(error);  // where split-K may run
      all.push_back(error);
    }
    if (entries) std::printf("\n");
    std::printf("roofline (%s spec sheet) vs %s, measured on %s\n", gpu->name.c_str(), args[0].c_str(),
                database.device_name.c_str());
    std::printf("error = (roofline - measured) / measured; + means the roofline is slower than the kernel\n\n");
    std::printf("%-14s %6s %16s   %s\n", "op class", "ops", "median |error|", "worst");
    for (const auto& [op_class, errors] : by_class) print_row(op_class, errors);
    print_row("all", all);
    if (derive) print_derived(database, *gpu);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
