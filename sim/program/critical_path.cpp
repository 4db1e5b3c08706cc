#include "sim/program/critical_path.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace simtrain {

namespace {

// From the task that ends last, back through the predecessor that ends last;
// on a tie, the first (lowest id, first listed). A negative end: the task never ran.
CriticalPath walk_back(const std::vector<std::vector<int>>& before, const std::vector<double>& end_seconds) {
  auto ends_later = [&](int a, int b) { return end_seconds[a] >= 0 && (b < 0 || end_seconds[a] > end_seconds[b]); };
  int last = -1;
  for (int id = 0; id < static_cast<int>(end_seconds.size()); ++id)
    if (ends_later(id, last)) last = id;
  CriticalPath path;
  path.seconds = last < 0 ? 0 : end_seconds[last];
  for (int id = last; id >= 0;) {
    path.tasks.push_back(id);
    int binding = -1;
    for (int p : before[id])
      if (ends_later(p, binding)) binding = p;
    id = binding;
  }
  std::reverse(path.tasks.begin(), path.tasks.end());
  return path;
}

}  // namespace

std::vector<std::vector<int>> task_predecessors(const Program& program) {
  std::vector<std::vector<int>> before(program.tasks.size());
  for (const Task& t : program.tasks) {
    const TaskDeps deps = program.deps(t);
    before[t.id].assign(deps.begin(), deps.end());
  }
  for (int rank = 0; rank < program.world_size; ++rank) {
    std::map<Stream, int> last_on_stream;
    for (int id : program.rank_tasks(rank)) {
      if (program.tasks[id].kind == TaskKind::RECV && !is_posted_in_order(program.tasks[id])) continue;
      auto [it, first] = last_on_stream.try_emplace(program.tasks[id].stream, id);
      if (!first) before[id].push_back(it->second), it->second = id;
    }
  }
  return before;
}

CriticalPath critical_path(const Program& program, const std::vector<double>& task_seconds) {
  const size_t n = program.tasks.size();
  const std::vector<std::vector<int>> before = task_predecessors(program);
  // Each task ends its duration after the last of its predecessors, in topological order.
  std::vector<int> waiting(n), order;
  std::vector<std::vector<int>> after(n);
  for (size_t id = 0; id < n; ++id) {
    waiting[id] = static_cast<int>(before[id].size());
    for (int p : before[id]) after[p].push_back(static_cast<int>(id));
    if (waiting[id] == 0) order.push_back(static_cast<int>(id));
  }
  std::vector<double> end(n, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const int id = order[i];
    double start = 0;
    for (int p : before[id]) start = std::max(start, end[p]);
    end[id] = start + (program.tasks[id].kind == TaskKind::RECV ? 0 : task_seconds[id]);
    for (int next : after[id])
      if (--waiting[next] == 0) order.push_back(next);
  }
  if (order.size() != n) throw std::logic_error("the Program's dependencies form a cycle");
  return walk_back(before, end);
}

CriticalPath critical_path(const Program& program, const Timeline& timeline) {
  std::vector<double> end_seconds;
  for (const TaskTiming& t : timeline.tasks) end_seconds.push_back(t.ran() ? t.end : -1);
  return walk_back(task_predecessors(program), end_seconds);
}

}  // namespace simtrain
