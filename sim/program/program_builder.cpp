#include "sim/program/program_builder.hpp"

#include <unordered_map>

#include "sim/program/lowering.hpp"

namespace simtrain {

namespace {

// Numbers the lowered tasks into the Program, rank after rank, each in list
// order; works get ids in the order tasks first use them.
class Numbering {
public:
  explicit Numbering(Program& program) : program_(program) {}

  void add(RankTasks& rank) {
    std::vector<int> id_of_label(rank.next_label, -1);
    int id = static_cast<int>(program_.tasks.size());
    for (const LoweredTask& lowered : rank.tasks) id_of_label[lowered.label] = id++;
    for (LoweredTask& lowered : rank.tasks) {
      Task& task = lowered.task;
      task.id = id_of_label[lowered.label];
      for (int label : lowered.deps) task.deps.push_back(id_of_label[label]);
      if (lowered.work) task.work = work_id(lowered.work);
      if (task.kind == TaskKind::SEND) sends_[lowered.transfer] = task.id;
      if (task.kind == TaskKind::RECV) receives_.emplace_back(lowered.transfer, task.id);
      program_.rank_tasks[task.rank].push_back(task.id);
      program_.tasks.push_back(std::move(task));
    }
  }

  // A RECV's one dependency: its SEND, on another rank.
  void link_transfers() {
    for (const auto& [key, receive] : receives_) program_.tasks[receive].deps.push_back(sends_.at(key));
  }

private:
  int work_id(const Work* work) {
    auto [it, inserted] = work_ids_.try_emplace(work, static_cast<int>(program_.works.size()));
    if (inserted) program_.works.push_back(*work);
    return it->second;
  }

  Program& program_;
  std::unordered_map<const Work*, int> work_ids_;
  std::unordered_map<uint64_t, int> sends_;
  std::vector<std::pair<uint64_t, int>> receives_;
};

}  // namespace

Program build_program(const Scenario& scenario, const Workload& workload) {
  LoweringContext context(scenario, workload);
  Program program;
  program.world_size = context.layout.world_size();
  program.tensor_size = context.layout.tensor;
  program.pipeline_size = context.layout.pipeline;
  program.virtual_stages = context.virtual_stages;
  program.micro_batches = context.micro_batches;
  program.servers = context.servers;
  program.coords = context.coords;
  program.groups = context.groups.list;
  program.rank_tasks.resize(program.world_size);
  const auto schedule = pipeline_schedule(scenario);
  Numbering numbering(program);
  for (int rank = 0; rank < program.world_size; ++rank) {
    RankTasks lowered = lower_rank(context, rank, schedule[context.coords[rank].pp]);
    numbering.add(lowered);
  }
  numbering.link_transfers();
  return program;
}

}  // namespace simtrain
