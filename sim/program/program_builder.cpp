#include "sim/program/program_builder.hpp"

#include <unordered_map>

#include "sim/program/lowering.hpp"
#include "sim/program/rank_translation.hpp"

namespace simtrain {

namespace {

// Numbers the lowered tasks into the Program, rank after rank, each in list
// order; works get ids in the order tasks first use them.
class Numbering {
public:
  explicit Numbering(Program& program) : program_(program) {}

  // Room for `ranks` ranks of up to twice `first`'s tasks, so that the
  // Program's arrays never grow by copying (a 1.5 GiB copy for the 1T job):
  // other stages hold more tasks than the first (it receives no activations),
  // and room never written costs address space only, not memory.
  void reserve(const RankTasks& first, int ranks) {
    size_t deps = 0, sends = 0;
    for (const LoweredTask& lowered : first.tasks) {
      deps += lowered.deps.size() + (lowered.task.kind == TaskKind::RECV);
      sends += lowered.task.kind == TaskKind::SEND;
    }
    const size_t scale = 2 * static_cast<size_t>(ranks);
    program_.tasks.reserve(first.tasks.size() * scale, deps * scale);
    sends_.reserve(sends * scale);
    receives_.reserve(sends * scale);
  }

  // The next rank's list: `rank`'s, or, given a translation, the rank's it translates `rank`'s list to.
  void add(const RankTasks& rank, const RankTranslation* translation = nullptr) {
    id_of_label_.assign(rank.next_label, -1);
    int id = static_cast<int>(program_.tasks.size());
    for (const LoweredTask& lowered : rank.tasks) id_of_label_[lowered.label] = id++;
    for (const LoweredTask& lowered : rank.tasks) {
      Task task = translation ? translation->translated(lowered.task) : lowered.task;
      const bool transfer_task = task.kind == TaskKind::SEND || task.kind == TaskKind::RECV;
      const uint64_t transfer =
          translation && transfer_task ? translation->translated_transfer(lowered.transfer) : lowered.transfer;
      deps_.clear();
      for (int label : lowered.deps) deps_.push_back(id_of_label_[label]);
      if (task.kind == TaskKind::RECV) deps_.push_back(kUnlinked);
      if (lowered.work) task.work = work_id(lowered.work);
      const int task_id = program_.add_task(task, deps_);
      if (task.kind == TaskKind::SEND) sends_[transfer] = task_id;
      if (task.kind == TaskKind::RECV) receives_.emplace_back(transfer, program_.tasks.stored_deps() - 1);
    }
    program_.end_rank();
  }

  // A RECV's one dependency: its SEND, on another rank.
  void link_transfers() {
    for (const auto& [key, dep_slot] : receives_) program_.tasks.stored_dep(dep_slot) = sends_.at(key);
  }

private:
  static constexpr int32_t kUnlinked = -1;  // a RECV's SEND, until every rank is numbered

  int work_id(const Work* work) {
    auto [it, inserted] = work_ids_.try_emplace(work, static_cast<int>(program_.works.size()));
    if (inserted) program_.works.push_back(*work);
    return it->second;
  }

  Program& program_;
  std::vector<int> id_of_label_;  // of the rank being numbered
  std::vector<int32_t> deps_;     // of the task being numbered
  std::unordered_map<const Work*, int> work_ids_;
  std::unordered_map<uint64_t, int> sends_;
  std::vector<std::pair<uint64_t, size_t>> receives_;  // a RECV's transfer, and which stored dependency its SEND is
};

// Whether every rank's list translates from its pipeline coordinate's first
// rank's; else a hierarchical data-parallel group split over unequal nodes
// makes some ranks' lists their own.
bool every_rank_translates(const LoweringContext& context) {
  for (int rank = 0; rank < context.layout.world_size(); ++rank) {
    const int first = context.layout.rank(0, 0, context.coords[rank].pp);
    if (rank != first && !RankTranslation::between(context, first, rank)) return false;
  }
  return true;
}

// Each rank's group of every kind, rank after rank (TaskTable::set_groups_of_rank).
std::vector<int32_t> groups_of_rank(const CommGroups& groups, int ranks) {
  std::vector<int32_t> flat;
  flat.reserve(static_cast<size_t>(ranks) * kGroupKinds.size());
  for (int rank = 0; rank < ranks; ++rank)
    for (auto kind : kGroupKinds) flat.push_back((groups.*kind)[rank]);
  return flat;
}

}  // namespace

Program build_program(const Scenario& scenario, const Workload& workload, ProgramBuildOptions options) {
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
  const auto schedule = pipeline_schedule(scenario);
  // Where every rank translates, the Program stores the lists lowered only,
  // one a pipeline coordinate, and the others read them translated.
  const bool store_lowered_only =
      !options.lower_every_rank && !options.store_every_rank && every_rank_translates(context);
  if (store_lowered_only)
    program.tasks.set_groups_of_rank(groups_of_rank(context.groups, program.world_size), kGroupKinds.size());
  Numbering numbering(program);
  RankTasks lowered;  // the last rank lowered in full
  for (int rank = 0; rank < program.world_size; ++rank) {
    if (store_lowered_only && rank > 0 && context.coords[rank].pp == context.coords[lowered.rank].pp) {
      program.tasks.add_translated_rank(lowered.rank);  // as every_rank_translates found
      continue;
    }
    const std::optional<RankTranslation> translation =
        rank == 0 || options.lower_every_rank ? std::nullopt : RankTranslation::between(context, lowered.rank, rank);
    if (translation) {
      numbering.add(lowered, &*translation);
      continue;
    }
    lowered = lower_rank(context, rank, schedule[context.coords[rank].pp], std::move(lowered));
    if (rank == 0) numbering.reserve(lowered, store_lowered_only ? program.pipeline_size : program.world_size);
    numbering.add(lowered);
  }
  numbering.link_transfers();
  return program;
}

}  // namespace simtrain
