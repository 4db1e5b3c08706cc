#include "step_estimate.hpp"

#include <algorithm>

#include "sim/base/text_format.hpp"
#include "sim/program/critical_path.hpp"

namespace simtrain {

double estimated_step_seconds(const Program& program, const std::vector<std::vector<double>>& work_seconds_by_rank) {
  std::vector<double> work_seconds(program.works.size(), 0);
  for (const std::vector<double>& rank : work_seconds_by_rank)
    for (size_t w = 0; w < std::min(rank.size(), work_seconds.size()); ++w)
      work_seconds[w] = std::max(work_seconds[w], rank[w]);
  std::vector<double> task_seconds(program.tasks.size(), 0);
  for (const Task& t : program.tasks)
    if (t.work >= 0) task_seconds[t.id] = work_seconds[t.work];
  return critical_path(program, task_seconds).seconds;
}

namespace {
constexpr double timeout_floor_seconds = 300, timeout_step_factor = 3;
}  // namespace

double default_timeout_seconds(double estimated_step_seconds) {
  return std::max(timeout_floor_seconds, timeout_step_factor * estimated_step_seconds);
}

std::string default_timeout_rule() {
  return format("%g x the estimated step", timeout_step_factor) + ", at least " + duration_text(timeout_floor_seconds);
}

std::string duration_text(double seconds) {
  if (seconds < 1) return format("%.0f ms", seconds * 1e3);
  if (seconds < 120) return format("%.1f s", seconds);
  if (seconds < 2 * 3600) return format("%.1f min", seconds / 60);
  return format("%.1f h", seconds / 3600);
}

}  // namespace simtrain
