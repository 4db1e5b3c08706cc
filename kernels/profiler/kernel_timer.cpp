#include "kernel_timer.hpp"

#include <vector>

#include "cuda_check.hpp"

namespace simtrain {

namespace {

class Event {
public:
  Event() { cuda::check(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

private:
  cudaEvent_t event_ = nullptr;
};

double elapsed_seconds(const Event& start, const Event& stop) {
  float milliseconds = 0;
  cuda::check(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "cudaEventElapsedTime");
  return milliseconds * 1e-3;
}

size_t flush_bytes() {
  int device = 0, l2_bytes = 0;
  cuda::check(cudaGetDevice(&device), "cudaGetDevice");
  cuda::check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute");
  return 2 * size_t(l2_bytes);
}

}  // namespace

KernelTimer::KernelTimer(cudaStream_t stream) : stream_(stream), flush_(flush_bytes()) {}

TimingSummary KernelTimer::time(const std::function<void(cudaStream_t)>& launch) {
  for (int i = 0; i < kWarmupRuns; ++i) launch(stream_);
  cuda::check(cudaStreamSynchronize(stream_), "warm-up");

  const int64_t repetitions = [&] {
    const Event start, stop;
    cuda::check(cudaEventRecord(start.get(), stream_), "cudaEventRecord");
    launch(stream_);
    cuda::check(cudaEventRecord(stop.get(), stream_), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
    return repetitions_for(elapsed_seconds(start, stop));
  }();

  std::vector<Event> starts(repetitions), stops(repetitions);
  for (int64_t i = 0; i < repetitions; ++i) {
    cuda::check(cudaMemsetAsync(flush_.get(), int(i), flush_.bytes(), stream_), "cudaMemsetAsync(L2 flush)");
    cuda::check(cudaEventRecord(starts[i].get(), stream_), "cudaEventRecord");
    launch(stream_);
    cuda::check(cudaEventRecord(stops[i].get(), stream_), "cudaEventRecord");
  }
  cuda::check(cudaStreamSynchronize(stream_), "timed runs");
  std::vector<double> seconds;
  for (int64_t i = 0; i < repetitions; ++i) seconds.push_back(elapsed_seconds(starts[i], stops[i]));
  return summarize(seconds);
}

}  // namespace simtrain
