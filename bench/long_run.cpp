// A 16,384-GPU Llama-3-405B-like job (TP8 PP16 DP128) on the 24K-GPU RoCE
// topology, trained for 54 days with failures and checkpoints: goodput, and
// how long the simulations themselves took on this machine.
#include <chrono>
#include <cstdio>

#include "sim/longrun/train.hpp"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "llama3-405b-16kxh100";
  const int runs = argc > 2 ? std::atoi(argv[2]) : 20;
  const auto start = std::chrono::steady_clock::now();
  simtrain::TrainRequest request;
  request.days = 54;
  request.runs = runs;
  const simtrain::TrainPlan plan = simtrain::plan_training(simtrain::load_scenario(name), request);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s", simtrain::to_text(plan).c_str());
  std::printf("single-step simulation  %.1f s wall (%zu tasks, %llu flows)\n", plan.step.report.wall_seconds,
              plan.step.program.tasks.size(), static_cast<unsigned long long>(plan.step.timeline.flows));
  std::printf("whole bench             %.1f s wall (step, degraded step, checkpoint write and read, %d runs)\n", wall, runs);
}
