// A kernel-profile database (`simtrain profile`), as a scenario names it in
// cluster.kernel_profile: read, checked against the cluster's GPU, then used
// to time every compute task of the scenario's Program.
#include "fuzz_support.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/program_builder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simtrain;
  static const std::string scenario_path = [] {
    nlohmann::json s = fuzz::tiny_scenario();
    s["cluster"]["kernel_profile"] = "profile.json";  // beside the scenario
    return fuzz::write_file("scenario.json", s.dump());
  }();
  const std::string path = fuzz::write_file("profile.json", fuzz::as_text(data, size));
  bool read = false;
  fuzz::refusal_allowed([&] {
    const ProfileDatabase database = load_profile_database(path);
    for (const GpuSpec& gpu : builtin_gpus()) same_gpu(database.device_name, gpu.name);
    for (const ProfileEntry& entry : database.entries) to_json(entry);
    read = true;
  });
  if (!read) return 0;  // the scenario would refuse it the same way; skipping it keeps refusals fast
  // The scenario and its Program do not depend on the input: read once (the
  // profile it names exists by now).
  static const Scenario s = load_scenario(scenario_path);
  static const Program program = build_program(s, build_workload(s));
  fuzz::refusal_allowed([&] {
    const std::unique_ptr<CostModel> cost_model = make_cost_model(s);  // reads and checks the profile
    for (const Work& work : program.works) work_seconds(*cost_model, work, s.training.dtype);  // as simulate() does
  });
  return 0;
}
