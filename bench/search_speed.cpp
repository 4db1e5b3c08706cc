// Configurations `simtrain search` simulates per second for GPT-3 175B on
// 1,024 H100: the same batch of strategies, one simulation at a time and as
// many at once as there are cores (each simulation forks a child).
#include <chrono>
#include <cstdio>
#include <thread>

#include "sim/engine/simulate.hpp"
#include "sim/search/search.hpp"

int main() {
  // Strategies the search simulates near the top of its table.
  const std::vector<std::vector<std::string>> strategies = {
      {"tensor_model_parallel_size=8", "pipeline_model_parallel_size=8"},
      {"tensor_model_parallel_size=8", "pipeline_model_parallel_size=16"},
      {"tensor_model_parallel_size=4", "pipeline_model_parallel_size=16", "sequence_parallel=true"},
      {"tensor_model_parallel_size=8", "pipeline_model_parallel_size=4", "zero_stage=1",
       "recompute_granularity=selective"}};
  std::vector<simtrain::Scenario> scenarios;
  for (const auto& overrides : strategies) scenarios.push_back(simtrain::load_scenario("gpt3-175b-1024xh100", overrides));
  std::vector<const simtrain::Scenario*> batch;
  for (const simtrain::Scenario& s : scenarios) batch.push_back(&s);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int jobs : {1, cores}) {
    const auto start = std::chrono::steady_clock::now();
    simtrain::local_simulator(jobs)(batch, {});
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%d at once: %zu configurations in %.1f s, %.2f configurations/s\n", jobs, batch.size(), wall,
                batch.size() / wall);
  }
}
