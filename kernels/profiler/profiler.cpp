// profile_kernels on a CUDA build: every planned kernel timed on GPU 0.
#include "profiler.hpp"

#include <cstdio>
#include <stdexcept>

#include "cuda_check.hpp"
#include "device_info.hpp"
#include "kernel_timer.hpp"
#include "prepared_kernel.hpp"
#include "sim/model/profile_database.hpp"
#include "profile_document.hpp"
#include "profile_plan.hpp"

namespace simtrain {

namespace {

class CudaStream {
public:
  CudaStream() { cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }

private:
  cudaStream_t stream_ = nullptr;
};

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f ms", seconds * 1e3);
  return text;
}

}  // namespace

nlohmann::json profile_kernels(const std::vector<Scenario>& scenarios, const ProfileOptions& options) {
  require_device();
  const nlohmann::json device = device_info();
  const std::string device_name = device.at("name");
  for (const Scenario& scenario : scenarios)
    if (options.progress && !same_gpu(device_name, scenario.cluster.gpu.name))
      *options.progress << "note: this GPU is " << device_name << ", " << scenario.name << "'s is "
                        << scenario.cluster.gpu.name << "; scenarios use this database when their cluster.gpu is "
                        << device_name << "\n";
  const std::vector<ProfileItem> plan = profile_plan(scenarios, options.sweep);
  const CudaStream stream;
  const cuda::CublasLt cublas;
  KernelTimer timer(stream.get());
  std::vector<ProfileEntry> entries;
  nlohmann::json skipped = nlohmann::json::array();
  for (size_t i = 0; i < plan.size(); ++i) {
    const ProfileItem& item = plan[i];
    const std::string label = "[" + std::to_string(i + 1) + "/" + std::to_string(plan.size()) + "] " + item.op.name +
                              " (" + item.call.description() + ")";
    try {
      const PreparedKernel kernel(item.call, cublas, stream.get());
      const TimingSummary t = timer.time([&](cudaStream_t s) { kernel.launch(s); });
      entries.push_back({item.op, item.dtype, item.call.description(), t.median_seconds, t.p10_seconds,
                         t.p90_seconds, t.repetitions});
      if (options.progress) *options.progress << label << ": " << milliseconds(t.median_seconds) << "\n";
    } catch (const std::exception& e) {
      // Out of memory or an unsupported shape skips the op; an error that
      // leaves the GPU unusable (a faulting kernel) ends the run.
      const cudaError_t sticky = cudaDeviceSynchronize();
      if (sticky != cudaSuccess)
        throw std::runtime_error(label + ": " + e.what() + "; the GPU is unusable: " + cudaGetErrorString(sticky));
      cudaGetLastError();  // clear the error the op left
      skipped.push_back({{"op", item.op.name}, {"shape", item.op.shape}, {"reason", e.what()}});
      if (options.progress) *options.progress << label << ": skipped: " << e.what() << "\n";
    }
  }
  if (entries.empty()) throw std::runtime_error("no kernel could be timed on " + device_name);
  return profile_document(scenarios, options, device, entries, skipped);
}

}  // namespace simtrain
