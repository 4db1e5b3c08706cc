// How far the roofline cost model is from measured kernel times: for every
// entry of a kernel-profile database, (roofline - measured) / measured, and
// per op class the median and the worst of its magnitude.
//   simtrain_bench_roofline_accuracy kernels/profiles/H100-SXM.json [--gpu H100-SXM]
// The GPU whose spec sheet the roofline uses is the built-in one the
// database's device matches (same_gpu), unless --gpu names one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/profile_database.hpp"

namespace {

using namespace simtrain;

const GpuSpec* find_gpu(const std::string& name, bool device_name) {
  for (const GpuSpec& gpu : builtin_gpus())
    if (device_name ? same_gpu(name, gpu.name) : gpu.name == name) return &gpu;
  return nullptr;
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

void print_row(const std::string& label, std::vector<Error> errors) {
  std::sort(errors.begin(), errors.end(),
            [](const Error& a, const Error& b) { return std::abs(a.relative) < std::abs(b.relative); });
  const size_t n = errors.size();
  const double median = n % 2 ? std::abs(errors[n / 2].relative)
                              : (std::abs(errors[n / 2 - 1].relative) + std::abs(errors[n / 2].relative)) / 2;
  std::printf("%-14s %6zu %14.1f %%   %+8.1f %%  (%s)\n", label.c_str(), n, 100 * median,
              100 * errors.back().relative, errors.back().op.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && std::string(argv[2]) == "--gpu")) {
    std::fprintf(stderr, "usage: %s <kernel-profile.json> [--gpu NAME]\n", argv[0]);
    return 2;
  }
  try {
    const ProfileDatabase database = load_profile_database(argv[1]);
    const GpuSpec* gpu = argc == 4 ? find_gpu(argv[3], false) : find_gpu(database.device_name, true);
    if (!gpu)
      throw InputError(argv[1], "device.name",
                       "no built-in GPU matches '" + database.device_name + "'; name one with --gpu");
    const RooflineModel roofline(*gpu);
    std::map<std::string, std::vector<Error>> by_class;
    std::vector<Error> all;
    for (const ProfileEntry& entry : database.entries) {
      const double predicted = roofline.op_time(entry.op, entry.dtype).seconds;
      const Error error{predicted / entry.median_seconds - 1, describe(entry)};
      by_class[to_string(entry.op.op_class)].push_back(error);
      all.push_back(error);
    }
    std::printf("roofline (%s spec sheet) vs %s, measured on %s\n", gpu->name.c_str(), argv[1],
                database.device_name.c_str());
    std::printf("error = (roofline - measured) / measured; + means the roofline is slower than the kernel\n\n");
    std::printf("%-14s %6s %16s   %s\n", "op class", "ops", "median |error|", "worst");
    for (const auto& [op_class, errors] : by_class) print_row(op_class, errors);
    print_row("all", all);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
