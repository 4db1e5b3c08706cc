// A Hugging Face config.json, named by a scenario as its model.
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simtrain;
  static const std::string scenario = [] {
    nlohmann::json s = fuzz::tiny_scenario();
    s["model"] = "config.json";  // beside the scenario
    return fuzz::write_file("scenario.json", s.dump());
  }();
  fuzz::write_file("config.json", fuzz::as_text(data, size));
  fuzz::refusal_allowed([&] { fuzz::use(load_scenario(scenario)); });
  return 0;
}
