// Wall time, peak memory and simulated tasks per second of one step of the
// default scenario (GPT-3 175B, TP8 PP8 DP16 on 1024 H100), or of the one
// named; and what its Program takes: the time to build it, its bytes per task
// and in all. `--program` stops once the Program is built.
#include <chrono>
#include <cstdio>
#include <cstring>

#include <sys/resource.h>

#include "sim/engine/simulate.hpp"
#include "sim/program/program_builder.hpp"

namespace {

using simtrain::Program;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class T>
double vector_bytes(const std::vector<T>& v) {
  return static_cast<double>(v.capacity() * sizeof(T));
}

// The arrays that grow with the tasks: the tasks, their dependencies, the ranks' lists.
double task_array_bytes(const Program& p) {
  double bytes = static_cast<double>(p.tasks.bytes()) + vector_bytes(p.recorded_names);
  for (const std::string& name : p.recorded_names) bytes += name.capacity();
  return bytes;
}

// Everything the Program holds, its works' ops and groups' ranks included.
double program_bytes(const Program& p) {
  double bytes = sizeof(Program) + task_array_bytes(p) + vector_bytes(p.coords) + vector_bytes(p.works) +
                 vector_bytes(p.groups);
  for (const simtrain::Work& work : p.works) {
    bytes += work.name.capacity() + vector_bytes(work.ops);
    for (const simtrain::Op& op : work.ops) bytes += op.name.capacity() + vector_bytes(op.shape);
  }
  for (const simtrain::Group& group : p.groups) bytes += group.name.capacity() + vector_bytes(group.ranks);
  return bytes;
}

void print_program(const Program& p, double build_seconds) {
  const double tasks = static_cast<double>(p.tasks.size());
  const double stored = static_cast<double>(p.tasks.stored_tasks());
  const double table_bytes = static_cast<double>(p.tasks.bytes());
  std::printf("ranks               %d\n", p.world_size);
  std::printf("tasks               %zu, %zu of them stored (%.2f dependencies each)\n", p.tasks.size(),
              p.tasks.stored_tasks(), static_cast<double>(p.tasks.stored_deps()) / stored);
  std::printf("program build       %.2f s\n", build_seconds);
  std::printf("bytes per task      %.1f (task table %.1f: a stored task %zu and its dependencies %.1f; timing %zu)\n",
              table_bytes / tasks + sizeof(simtrain::TaskTiming), table_bytes / tasks, sizeof(simtrain::Task),
              static_cast<double>(p.tasks.dependency_bytes()) / stored, sizeof(simtrain::TaskTiming));
  std::printf("program memory      %.0f MiB (%.0f MiB of it in arrays per task)\n", program_bytes(p) / (1 << 20),
              task_array_bytes(p) / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
  const bool program_only = argc > 1 && std::strcmp(argv[argc - 1], "--program") == 0;
  const int names = argc - 1 - (program_only ? 1 : 0);
  const std::string name = names > 0 ? argv[1] : simtrain::default_scenario_name();
  const simtrain::Scenario scenario = simtrain::load_scenario(name);
  std::printf("scenario            %s\n", name.c_str());
  {
    const auto start = std::chrono::steady_clock::now();
    const Program program = simtrain::build_program(scenario, simtrain::build_workload(scenario));
    print_program(program, seconds_since(start));
  }
  if (program_only) return 0;

  const auto start = std::chrono::steady_clock::now();
  const simtrain::Simulation sim = simtrain::simulate(scenario);
  const double wall = seconds_since(start);
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);  // the SimGrid replay runs in a child process
  std::printf("simulated tasks     %llu (executed by actors, one per TP group)\n",
              static_cast<unsigned long long>(sim.timeline.simulated_tasks));
  std::printf("network flows       %llu\n", static_cast<unsigned long long>(sim.timeline.flows));
  std::printf("simulated step      %.4f s\n", sim.timeline.step_seconds);
  std::printf("wall time           %.2f s (the Program built again, and replayed)\n", wall);
  std::printf("tasks per second    %.0f\n", sim.program.tasks.size() / wall);
  std::printf("peak memory         %.0f MiB (this process), %.0f MiB (simulation child)\n", self.ru_maxrss / 1024.0,
              children.ru_maxrss / 1024.0);
}
