#include "sim/program/critical_path.hpp"

#include <map>
#include <stdexcept>

namespace simtrain {

CriticalPath critical_path(const Program& program, const std::vector<double>& task_seconds) {
  const size_t n = program.tasks.size();
  // Predecessors: dependencies, and the task before on the same stream of the same rank.
  std::vector<std::vector<int>> before(n);
  for (const Task& t : program.tasks) before[t.id] = t.deps;
  for (int rank = 0; rank < program.world_size; ++rank) {
    std::map<Stream, int> last_on_stream;
    for (int id : program.rank_tasks[rank]) {
      if (program.tasks[id].kind == TaskKind::RECV) continue;  // passive: not queued on a stream
      auto [it, first] = last_on_stream.try_emplace(program.tasks[id].stream, id);
      if (!first) before[id].push_back(it->second), it->second = id;
    }
  }
  std::vector<int> waiting(n), order;
  std::vector<std::vector<int>> after(n);
  for (size_t id = 0; id < n; ++id) {
    waiting[id] = static_cast<int>(before[id].size());
    for (int p : before[id]) after[p].push_back(static_cast<int>(id));
    if (waiting[id] == 0) order.push_back(static_cast<int>(id));
  }
  std::vector<double> end(n, 0);
  std::vector<int> via(n, -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const int id = order[i];
    double start = 0;
    for (int p : before[id])
      if (via[id] < 0 || end[p] > start) start = end[p], via[id] = p;  // the predecessor that ends last
    end[id] = start + (program.tasks[id].kind == TaskKind::RECV ? 0 : task_seconds[id]);
    for (int next : after[id])
      if (--waiting[next] == 0) order.push_back(next);
  }
  if (order.size() != n) throw std::logic_error("the Program's dependencies form a cycle");
  CriticalPath path;
  int last = -1;
  for (size_t id = 0; id < n; ++id)
    if (last < 0 || end[id] > end[last]) last = static_cast<int>(id);
  path.seconds = last < 0 ? 0 : end[last];
  for (int id = last; id >= 0; id = via[id]) path.tasks.insert(path.tasks.begin(), id);
  return path;
}

}  // namespace simtrain
