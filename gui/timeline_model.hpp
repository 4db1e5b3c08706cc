#pragma once
// What the timeline draws, computed once per step (Qt-free): each rank's
// tasks per stream lane sorted by start, its idle spans (the bubbles), where
// the hosts were simulated its host's launches (sim/program/host_track.hpp),
// and each task's predecessors (its dependencies and the task issued before
// it on its stream, sim/program/critical_path.hpp), through which the
// critical path is walked back.
#include <memory>
#include <vector>

#include "sim/program/host_track.hpp"
#include "step_result.hpp"

namespace simtrain::gui {

// Colour classes of the timeline's boxes. Backward is the whole backward, or
// its input-gradient part where the schedule splits off the weight gradients.
enum class BoxKind { forward, backward_input, backward_weight, recompute, optimizer, tp_comm, pp_comm, dp_comm, cp_comm, ep_comm };
constexpr int box_kind_count = 10;
BoxKind box_kind(const Task& task);
const char* to_label(BoxKind kind);  // "forward", "TP comm", ...

struct Span {
  double start_seconds = 0;
  double end_seconds = 0;
};

class TimelineModel {
public:
  explicit TimelineModel(std::shared_ptr<const StepResult> step);

  const StepResult& step() const { return *step_; }
  const Program& program() const { return step_->program; }
  const TaskTiming& timing(int task) const { return step_->timeline.tasks[task]; }
  double step_seconds() const { return step_->timeline.step_seconds; }
  bool ran(int task) const;  // has a start and an end

  // Lanes: the streams some task uses, compute first.
  const std::vector<Stream>& lanes() const { return lanes_; }
  int lane_of(int task) const { return lane_index_[static_cast<int>(program().tasks[task].stream)]; }
  const std::vector<int>& lane_tasks(int rank, int lane) const { return rank_lanes_[rank][lane].tasks; }
  // Index in lane_tasks of the first task that may end after `seconds`: all before it end by then.
  size_t first_ending_after(int rank, int lane, double seconds) const;
  // Index of the first task in lane_tasks[from..] that starts at or after `seconds`.
  size_t first_starting_from(int rank, int lane, size_t from, double seconds) const;

  // Where the step's hosts were simulated (a simulation, or a trace with host
  // tracks): each rank's host launching its tasks, a slice per task, by start.
  bool hosts_simulated() const { return !host_slices_.empty(); }
  const std::vector<HostSlice>& host_slices(int rank) const { return host_slices_[rank]; }
  // Index in host_slices of the first slice that ends after `seconds`.
  size_t first_host_slice_ending_after(int rank, double seconds) const;

  const std::vector<Span>& idle_spans(int rank) const { return idle_[rank]; }
  double idle_fraction(int rank) const { return idle_fraction_[rank]; }

  const std::vector<int>& predecessors(int task) const { return predecessors_[task]; }
  // From the task that ends last, back through the predecessor that ended last; first task first.
  std::vector<int> critical_path() const;

private:
  struct Lane {
    std::vector<int> tasks;
    std::vector<double> latest_end;  // latest end among tasks[0..i] (receives may overlap)
  };
  std::shared_ptr<const StepResult> step_;
  std::vector<Stream> lanes_;
  std::vector<int> lane_index_;  // per Stream value
  std::vector<std::vector<Lane>> rank_lanes_;
  std::vector<std::vector<HostSlice>> host_slices_;  // by rank; empty: hosts not simulated
  std::vector<std::vector<Span>> idle_;
  std::vector<double> idle_fraction_;
  std::vector<std::vector<int>> predecessors_;  // indexed by task id
};

}  // namespace simtrain::gui
