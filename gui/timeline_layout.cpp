#include "timeline_layout.hpp"

#include <algorithm>

namespace simtrain::gui {

TimelineLayout::TimelineLayout(const TimelineModel& model) : model_(model) {
  const Program& p = model.program();
  stage_ranks_.resize(p.pipeline_size);
  for (int rank = 0; rank < p.world_size; ++rank) stage_ranks_[p.coords[rank].pp].push_back(rank);
  expanded_.assign(p.pipeline_size, p.world_size <= 16);
  build_rows();
}

void TimelineLayout::set_scale(double origin_seconds, double pixels_per_second) {
  origin_seconds_ = origin_seconds;
  pixels_per_second_ = pixels_per_second;
}

void TimelineLayout::set_lane_scale(double scale) {
  lane_scale_ = std::clamp(scale, 1.0, max_lane_scale);
  build_rows();
}

double TimelineLayout::lane_scale_to_fill(double height) const {
  if (lanes_height_at_scale_1_ <= 0) return 1;
  return std::clamp((height - unscaled_height_) / lanes_height_at_scale_1_, 1.0, max_lane_scale);
}

void TimelineLayout::expand(int stage, bool expanded) {
  expanded_[stage] = expanded;
  build_rows();
}

void TimelineLayout::expand_all(bool expanded) {
  expanded_.assign(expanded_.size(), expanded);
  build_rows();
}

void TimelineLayout::build_rows() {
  rows_.clear();
  row_of_rank_.assign(model_.program().world_size, -1);
  const double lanes_height = lane_offset(lane_count() - 1) + lane_height(lane_count() - 1);
  const double rank_height = lanes_height + row_gap;
  double y = 0;
  int ranks_shown = 0;
  for (size_t stage = 0; stage < stage_ranks_.size(); ++stage) {
    rows_.push_back({static_cast<int>(stage), -1, y, stage_header_height});
    y += stage_header_height;
    for (int rank : stage_ranks_[stage]) {
      const RankCoord& c = model_.program().coords[rank];
      if (!expanded_[stage] && (c.tp != 0 || c.dp != 0)) continue;
      row_of_rank_[rank] = static_cast<int>(rows_.size());
      rows_.push_back({static_cast<int>(stage), rank, y, rank_height});
      y += rank_height;
      ++ranks_shown;
    }
  }
  lanes_height_at_scale_1_ = ranks_shown * lanes_height / lane_scale_;
  unscaled_height_ = y - ranks_shown * lanes_height;
}

size_t TimelineLayout::first_row_ending_below(double y) const {
  return std::upper_bound(rows_.begin(), rows_.end(), y,
                          [](double value, const TimelineRow& row) { return value < row.y + row.height; }) -
         rows_.begin();
}

std::optional<size_t> TimelineLayout::row_of_rank(int rank) const {
  if (row_of_rank_[rank] < 0) return std::nullopt;
  return static_cast<size_t>(row_of_rank_[rank]);
}

int TimelineLayout::lane_count() const {
  return static_cast<int>(model_.lanes().size()) + (model_.hosts_simulated() ? 1 : 0);
}

std::optional<int> TimelineLayout::host_lane() const {
  if (!model_.hosts_simulated()) return std::nullopt;
  return static_cast<int>(model_.lanes().size());
}

// The host lane comes after every stream lane: its offset is theirs.
double TimelineLayout::lane_offset(int lane) const {
  return lane == 0 ? 0 : lane_scale_ * (compute_lane_height + stream_lane_height * (lane - 1));
}

double TimelineLayout::lane_height(int lane) const {
  const double height = lane == 0 ? compute_lane_height : lane == host_lane() ? host_lane_height : stream_lane_height;
  return lane_scale_ * height;
}

int TimelineLayout::lane_at(double within) const {
  for (int lane = 0; lane < lane_count(); ++lane)
    if (within >= lane_offset(lane) && within < lane_offset(lane) + lane_height(lane)) return lane;
  return -1;
}

std::optional<Rect> TimelineLayout::task_rect(int task) const {
  const std::optional<size_t> row = row_of_rank(model_.program().tasks[task].rank);
  if (!row || !model_.ran(task)) return std::nullopt;
  const int lane = model_.lane_of(task);
  const TaskTiming& t = model_.timing(task);
  return Rect{x_of(t.start), rows_[*row].y + lane_offset(lane), (t.end - t.start) * pixels_per_second_,
              lane_height(lane)};
}

int TimelineLayout::task_at(double x, double y, double slack_px) const {
  const size_t row = first_row_ending_below(y);
  if (row >= rows_.size() || rows_[row].rank < 0 || y < rows_[row].y) return -1;
  const int rank = rows_[row].rank;
  const int lane = lane_at(y - rows_[row].y);
  if (lane < 0 || lane == host_lane()) return -1;
  // The box containing the time, else the nearest within the slack.
  const double seconds = seconds_at(x), slack = slack_px / pixels_per_second_;
  const std::vector<int>& tasks = model_.lane_tasks(rank, lane);
  int best = -1;
  double best_distance = slack;
  for (size_t i = model_.first_ending_after(rank, lane, seconds - slack); i < tasks.size(); ++i) {
    const TaskTiming& t = model_.timing(tasks[i]);
    if (t.start > seconds + slack) break;
    const double distance = seconds < t.start ? t.start - seconds : seconds > t.end ? seconds - t.end : 0;
    if (distance <= best_distance) best = tasks[i], best_distance = distance;
  }
  return best;
}

std::optional<Rect> TimelineLayout::host_slice_rect(int rank, size_t index) const {
  const std::optional<size_t> row = row_of_rank(rank);
  if (!row || !host_lane()) return std::nullopt;
  const HostSlice& slice = model_.host_slices(rank)[index];
  return Rect{x_of(slice.start_seconds), rows_[*row].y + lane_offset(*host_lane()),
              (slice.end_seconds - slice.start_seconds) * pixels_per_second_, lane_height(*host_lane())};
}

const HostSlice* TimelineLayout::host_slice_at(double x, double y, double slack_px) const {
  const size_t row = first_row_ending_below(y);
  if (!host_lane() || row >= rows_.size() || rows_[row].rank < 0 || y < rows_[row].y ||
      lane_at(y - rows_[row].y) != host_lane())
    return nullptr;
  // Slices follow one another: the one containing the time, else the nearest within the slack.
  const std::vector<HostSlice>& slices = model_.host_slices(rows_[row].rank);
  const double seconds = seconds_at(x), slack = slack_px / pixels_per_second_;
  const HostSlice* best = nullptr;
  double best_distance = slack;
  for (size_t i = model_.first_host_slice_ending_after(rows_[row].rank, seconds - slack); i < slices.size(); ++i) {
    const HostSlice& s = slices[i];
    if (s.start_seconds > seconds + slack) break;
    const double distance = seconds < s.start_seconds ? s.start_seconds - seconds
                            : seconds > s.end_seconds ? seconds - s.end_seconds : 0;
    if (distance <= best_distance) best = &s, best_distance = distance;
  }
  return best;
}

}  // namespace simtrain::gui
