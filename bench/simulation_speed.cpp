// Wall time, peak memory and simulated tasks per second of one step of the
// default scenario (GPT-3 175B, TP8 PP8 DP16 on 1024 H100).
#include <chrono>
#include <cstdio>

#include <sys/resource.h>

#include "sim/engine/simulate.hpp"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : simtrain::default_scenario_name();
  const auto start = std::chrono::steady_clock::now();
  const simtrain::Simulation sim = simtrain::simulate(simtrain::load_scenario(name));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);  // the SimGrid replay runs in a child process
  std::printf("scenario            %s\n", name.c_str());
  std::printf("ranks               %d\n", sim.program.world_size);
  std::printf("tasks               %zu (%llu executed by actors, one per TP group)\n", sim.program.tasks.size(),
              static_cast<unsigned long long>(sim.timeline.simulated_tasks));
  std::printf("network flows       %llu\n", static_cast<unsigned long long>(sim.timeline.flows));
  std::printf("simulated step      %.4f s\n", sim.timeline.step_seconds);
  std::printf("wall time           %.2f s\n", wall);
  std::printf("tasks per second    %.0f\n", sim.program.tasks.size() / wall);
  std::printf("peak memory         %.0f MiB (this process), %.0f MiB (simulation child)\n", self.ru_maxrss / 1024.0,
              children.ru_maxrss / 1024.0);
}
