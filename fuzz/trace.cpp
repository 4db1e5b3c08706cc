// A Chrome trace (`simtrain simulate --trace`, the live runner), as the GUI
// opens one: read back into a Program and Timeline, then timed like a
// simulated step (timing_report).
#include "fuzz_support.hpp"
#include "sim/program/trace_reader.hpp"
#include "sim/step/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simtrain;
  const std::string path = fuzz::write_file("trace.json", fuzz::as_text(data, size));
  fuzz::refusal_allowed([&] {
    const RecordedStep step = read_chrome_trace_file(path);
    timing_report(step.program, step.timeline);
  });
  return 0;
}
