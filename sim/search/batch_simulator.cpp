#include "sim/search/search.hpp"

#include "sim/base/child_process.hpp"
#include "sim/engine/simulate.hpp"

namespace simtrain {

nlohmann::json to_json(const StepFigures& f) {
  return {{"step_seconds", f.step_seconds},
          {"tokens_per_second", f.tokens_per_second},
          {"model_tflops_per_gpu", f.model_tflops_per_gpu},
          {"mfu", f.mfu},
          {"bubble_fraction", f.bubble_fraction},
          {"exposed_comm_over_compute", f.exposed_comm_over_compute},
          {"error", f.error}};
}

StepFigures step_figures_from_json(const nlohmann::json& j) {
  StepFigures f;
  f.step_seconds = j.at("step_seconds").get<double>();
  f.tokens_per_second = j.at("tokens_per_second").get<double>();
  f.model_tflops_per_gpu = j.at("model_tflops_per_gpu").get<double>();
  f.mfu = j.at("mfu").get<double>();
  f.bubble_fraction = j.at("bubble_fraction").get<double>();
  f.exposed_comm_over_compute = j.at("exposed_comm_over_compute").get<double>();
  f.error = j.at("error").get<std::string>();
  return f;
}

BatchSimulator local_simulator(int jobs, const std::atomic<bool>* cancel) {
  return [jobs, cancel](const std::vector<const Scenario*>& batch, const std::function<void()>& on_done) {
    ChildOptions options;
    options.cancel = cancel;
    // Each configuration in a child of its own (whose replay forks once more).
    const std::vector<std::string> results = run_in_children(
        batch.size(), jobs,
        [&](size_t i) {
          StepFigures f;
          try {
            const StepReport r = simulate(*batch[i]).report;
            f = {r.step_seconds, r.tokens_per_second, r.model_tflops_per_gpu, r.mfu, r.bubble_fraction,
                 r.most_exposed_over_compute, ""};
          } catch (const std::exception& e) {
            f.error = e.what();
          }
          return to_json(f).dump();
        },
        [&](size_t) {
          if (on_done) on_done();
        },
        options);
    std::vector<StepFigures> figures;
    for (const std::string& text : results) figures.push_back(step_figures_from_json(nlohmann::json::parse(text)));
    return figures;
  };
}

}  // namespace simtrain
