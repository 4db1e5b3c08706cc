#pragma once
// Where the timeline puts things, in pixels (Qt-free, so tests can check it):
// the time axis at the current zoom and pan, and the rows: a header per
// pipeline stage, then one row per rank with a lane per stream and, where the
// hosts were simulated, a host lane under them. A stage can
// be collapsed to its tp 0, dp 0 rank (the one the report measures): its TP
// peers run in lockstep with it and its DP replicas alike. Steps of more than
// 16 ranks start collapsed.
#include <optional>
#include <vector>

#include "timeline_model.hpp"

namespace simtrain::gui {

struct Rect {
  double x = 0, y = 0, width = 0, height = 0;
};

struct TimelineRow {
  int stage = 0;   // pipeline rank
  int rank = -1;   // -1: the stage's header row
  double y = 0;    // top, in content coordinates (0: top of the first row)
  double height = 0;
};

class TimelineLayout {
public:
  static constexpr double header_width = 200;  // row labels, left of the time axis
  static constexpr double stage_header_height = 20;
  static constexpr double compute_lane_height = 17;  // at lane scale 1
  static constexpr double stream_lane_height = 5;
  static constexpr double host_lane_height = 6;
  static constexpr double max_lane_scale = 4;
  static constexpr double row_gap = 3;

  explicit TimelineLayout(const TimelineModel& model);

  // x = header_width + (seconds - origin) * pixels_per_second.
  void set_scale(double origin_seconds, double pixels_per_second);
  double origin_seconds() const { return origin_seconds_; }
  double pixels_per_second() const { return pixels_per_second_; }
  double x_of(double seconds) const { return header_width + (seconds - origin_seconds_) * pixels_per_second_; }
  double seconds_at(double x) const { return origin_seconds_ + (x - header_width) / pixels_per_second_; }

  int rank_count(int stage) const { return static_cast<int>(stage_ranks_[stage].size()); }
  bool expanded(int stage) const { return expanded_[stage]; }
  void expand(int stage, bool expanded);
  void expand_all(bool expanded);

  // Lanes `scale` times their height (1 to max_lane_scale): a step of few rows fills its pane.
  void set_lane_scale(double scale);
  double lane_scale() const { return lane_scale_; }
  // The lane scale at which the rows fill `height` pixels, if they are shorter at scale 1.
  double lane_scale_to_fill(double height) const;

  const std::vector<TimelineRow>& rows() const { return rows_; }
  double content_height() const { return rows_.empty() ? 0 : rows_.back().y + rows_.back().height; }
  double natural_content_height() const { return unscaled_height_ + lanes_height_at_scale_1_; }  // at lane scale 1
  size_t first_row_ending_below(double y) const;
  std::optional<size_t> row_of_rank(int rank) const;
  // Lanes: the model's stream lanes, then the host lane where the hosts were simulated.
  int lane_count() const;
  std::optional<int> host_lane() const;
  double lane_offset(int lane) const;  // top of a lane within its rank row
  double lane_height(int lane) const;

  // A task's box in content coordinates; none if its rank is hidden or it never ran.
  std::optional<Rect> task_rect(int task) const;
  // The task drawn at (x, y) in content coordinates (within `slack_px` of a thin box), -1 if none.
  int task_at(double x, double y, double slack_px = 2) const;
  // A host slice's box (model.host_slices(rank)[index]); none if its rank is hidden.
  std::optional<Rect> host_slice_rect(int rank, size_t index) const;
  // The host slice drawn at (x, y) in content coordinates, as task_at; null if none.
  const HostSlice* host_slice_at(double x, double y, double slack_px = 2) const;

private:
  void build_rows();
  // The lane at `within` pixels below the top of a rank row, -1 if none.
  int lane_at(double within) const;

  const TimelineModel& model_;
  double origin_seconds_ = 0;
  double pixels_per_second_ = 1;
  double lane_scale_ = 1;
  double lanes_height_at_scale_1_ = 0;  // of the rows shown
  double unscaled_height_ = 0;          // their stage headers and gaps
  std::vector<std::vector<int>> stage_ranks_;  // ranks of each stage in rank order
  std::vector<bool> expanded_;
  std::vector<TimelineRow> rows_;
  std::vector<int> row_of_rank_;  // -1 when hidden
};

}  // namespace simtrain::gui
