#include "sim/program/program.hpp"

#include <cmath>
#include <cstdio>
#include <map>

namespace simtrain {

double Work::flops() const { return total_flops(ops); }
double Work::bytes() const { return total_bytes(ops); }

double work_seconds(const CostModel& model, const Work& work, Dtype dtype) {
  return accumulate_op_seconds(work.fixed_seconds, model, work.ops, dtype);
}

std::vector<TaskQueue> task_queues(const Program& program, int rank, bool receives_ahead) {
  std::map<std::pair<Stream, int>, std::vector<int>> queues;  // ordered: every executor sees the same queues
  for (int id : program.rank_tasks(rank)) {
    const Task& t = program.tasks[id];
    const Stream stream = receives_ahead && t.kind == TaskKind::RECV ? Stream::p2p : t.stream;
    queues[{stream, stream == Stream::p2p ? t.peer : -1}].push_back(id);
  }
  std::vector<TaskQueue> result;
  for (auto& [key, ids] : queues) result.push_back({key.first, key.second, std::move(ids)});
  return result;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) bytes /= 1024, ++unit;
  char text[32];
  if (bytes == std::floor(bytes) || bytes >= 100)
    std::snprintf(text, sizeof text, "%.0f%s", bytes, units[unit]);
  else
    std::snprintf(text, sizeof text, "%.3g%s", bytes, units[unit]);
  return text;
}

namespace {

nlohmann::json task_json(const Program& program, const Task& t) {
  nlohmann::json task = {
      {"id", t.id}, {"name", task_name(program, t)}, {"kind", to_string(t.kind)}, {"stream", to_string(t.stream)}};
  if (t.stage >= 0) task["stage"] = t.stage;
  if (t.microbatch >= 0) task["microbatch"] = t.microbatch;
  if (t.work >= 0) task["work"] = t.work, task["layers"] = {t.layer_begin, t.layer_end};
  if (t.dim != CommDim::none) task["dim"] = to_string(t.dim), task["bytes"] = t.bytes;
  if (t.peer >= 0) task["peer"] = t.peer;
  if (t.joins_batch) task["joins_batch"] = true;
  if (t.group >= 0) task["group"] = t.group;
  if (t.count != 1) task["count"] = t.count;
  const TaskDeps deps = program.deps(t);
  task["deps"] = std::vector<int>(deps.begin(), deps.end());
  return task;
}

}  // namespace

void write_json(std::ostream& out, const Program& program, const std::function<void(int ranks_written)>& on_rank) {
  nlohmann::json works = nlohmann::json::array();
  for (const Work& work : program.works) {
    nlohmann::json ops = nlohmann::json::array();
    for (const Op& op : work.ops)
      ops.push_back({{"name", op.name}, {"class", to_string(op.op_class)}, {"shape", op.shape}, {"flops", op.flops},
                     {"bytes", op.bytes}});
    works.push_back({{"name", work.name}, {"flops", work.flops()}, {"bytes", work.bytes()}, {"ops", ops}});
    if (work.fixed_seconds > 0) works.back()["fixed_seconds"] = work.fixed_seconds;
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const Group& group : program.groups) {
    groups.push_back({{"id", group.id}, {"name", group.name}, {"dim", to_string(group.dim)}, {"ranks", group.ranks}});
    if (group.allreduce_algorithm) groups.back()["allreduce_algorithm"] = to_string(*group.allreduce_algorithm);
    if (group.servers > 0) groups.back()["servers"] = group.servers;
  }
  // One rank's tasks at a time, so that a Program of millions of tasks is
  // never held as one document; the keys in nlohmann::json's (sorted) order.
  out << R"({"groups":)" << groups.dump() << R"(,"micro_batches":)" << program.micro_batches
      << R"(,"pipeline_size":)" << program.pipeline_size << R"(,"ranks":[)";
  for (int rank = 0; rank < program.world_size; ++rank) {
    nlohmann::json tasks = nlohmann::json::array();
    for (int id : program.rank_tasks(rank)) tasks.push_back(task_json(program, program.tasks[id]));
    out << (rank ? "," : "") << nlohmann::json{{"rank", rank}, {"tasks", std::move(tasks)}}.dump();
    if (on_rank) on_rank(rank + 1);
  }
  out << R"(],"servers":)" << program.servers << R"(,"virtual_stages":)" << program.virtual_stages
      << R"(,"works":)" << works.dump() << R"(,"world_size":)" << program.world_size << "}";
}

}  // namespace simtrain
