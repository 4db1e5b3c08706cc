#include "timeline_model.hpp"

#include <algorithm>

#include "sim/program/critical_path.hpp"

namespace simtrain::gui {

namespace {
constexpr int stream_count = static_cast<int>(Stream::tp_overlap) + 1;
}

BoxKind box_kind(const Task& task) {
  switch (task.kind) {
    case TaskKind::F: return BoxKind::forward;
    case TaskKind::B: return BoxKind::backward_input;
    case TaskKind::W: return BoxKind::backward_weight;
    case TaskKind::R: return BoxKind::recompute;
    case TaskKind::OPT: return BoxKind::optimizer;
    default: break;
  }
  switch (task.dim) {
    case CommDim::tp: return BoxKind::tp_comm;
    case CommDim::pp: return BoxKind::pp_comm;
    case CommDim::cp: return BoxKind::cp_comm;
    case CommDim::ep: return BoxKind::ep_comm;
    default: return BoxKind::dp_comm;
  }
}

const char* to_label(BoxKind kind) {
  static const char* labels[] = {"forward",   "backward", "weight grad", "recompute",
                                 "optimizer", "TP comm",  "PP comm",     "DP comm", "CP comm", "EP comm"};
  return labels[static_cast<int>(kind)];
}

TimelineModel::TimelineModel(std::shared_ptr<const StepResult> step) : step_(std::move(step)) {
  const Program& p = program();
  lane_index_.assign(stream_count, -1);
  std::vector<bool> used(stream_count, false);
  used[static_cast<int>(Stream::compute)] = true;
  for (const Task& t : p.tasks) used[static_cast<int>(t.stream)] = true;
  for (int s = 0; s < stream_count; ++s)
    if (used[s]) lane_index_[s] = static_cast<int>(lanes_.size()), lanes_.push_back(static_cast<Stream>(s));

  predecessors_ = task_predecessors(p);
  rank_lanes_.resize(p.world_size);
  idle_.resize(p.world_size);
  idle_fraction_.assign(p.world_size, 0);
  for (int rank = 0; rank < p.world_size; ++rank) {
    std::vector<Lane>& lanes = rank_lanes_[rank];
    lanes.resize(lanes_.size());
    std::vector<Span> busy;
    for (int id : p.rank_tasks(rank)) {
      if (!ran(id)) continue;
      lanes[lane_of(id)].tasks.push_back(id);
      busy.push_back({timing(id).start, timing(id).end});
    }
    for (Lane& lane : lanes) {
      std::stable_sort(lane.tasks.begin(), lane.tasks.end(),
                       [&](int a, int b) { return timing(a).start < timing(b).start; });
      double latest = 0;
      for (int id : lane.tasks) lane.latest_end.push_back(latest = std::max(latest, timing(id).end));
    }
    std::sort(busy.begin(), busy.end(), [](const Span& a, const Span& b) { return a.start_seconds < b.start_seconds; });
    double covered = 0, idle = 0;
    for (const Span& b : busy) {
      if (b.start_seconds > covered) idle_[rank].push_back({covered, b.start_seconds}), idle += b.start_seconds - covered;
      covered = std::max(covered, b.end_seconds);
    }
    if (step_seconds() > covered) idle_[rank].push_back({covered, step_seconds()}), idle += step_seconds() - covered;
    idle_fraction_[rank] = step_seconds() > 0 ? idle / step_seconds() : 0;
  }
  if (!step_->timeline.host_of_rank.empty())
    for (int rank = 0; rank < p.world_size; ++rank) host_slices_.push_back(host_track(p, step_->timeline, rank));
}

bool TimelineModel::ran(int task) const {
  return timing(task).ran();
}

size_t TimelineModel::first_ending_after(int rank, int lane, double seconds) const {
  const std::vector<double>& latest = rank_lanes_[rank][lane].latest_end;
  return std::upper_bound(latest.begin(), latest.end(), seconds) - latest.begin();
}

size_t TimelineModel::first_host_slice_ending_after(int rank, double seconds) const {
  const std::vector<HostSlice>& slices = host_slices_[rank];  // one after another: their ends ascend
  return std::upper_bound(slices.begin(), slices.end(), seconds,
                          [](double s, const HostSlice& slice) { return s < slice.end_seconds; }) -
         slices.begin();
}

size_t TimelineModel::first_starting_from(int rank, int lane, size_t from, double seconds) const {
  const std::vector<int>& tasks = lane_tasks(rank, lane);
  return std::lower_bound(tasks.begin() + static_cast<long>(from), tasks.end(), seconds,
                          [&](int id, double s) { return timing(id).start < s; }) -
         tasks.begin();
}

std::vector<int> TimelineModel::critical_path() const {
  return simtrain::critical_path(program(), step_->timeline).tasks;
}

}  // namespace simtrain::gui
