// A topology JSON, as a file a scenario names and inline in a scenario.
#include "fuzz_support.hpp"
#include "sim/base/json_fields.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simtrain;
  static const nlohmann::json base = fuzz::tiny_scenario();
  static const std::string scenario_naming_file = [] {
    nlohmann::json s = base;
    s["cluster"]["topology"] = "topology.json";  // beside the scenario
    return fuzz::write_file("scenario.json", s.dump());
  }();
  const std::string_view input = fuzz::as_text(data, size);
  fuzz::write_file("topology.json", input);
  fuzz::refusal_allowed([&] { fuzz::use(load_scenario(scenario_naming_file)); });
  fuzz::refusal_allowed([&] {
    nlohmann::json scenario = base;
    try {
      scenario["cluster"]["topology"] = parse_json(input, "inline.json", "cluster.topology");
    } catch (const nlohmann::json::exception&) {
      return;  // not JSON: no scenario can hold it inline
    }
    fuzz::use(parse_scenario(scenario, "inline.json", fuzz::work_dir().string()));
  });
  return 0;
}
