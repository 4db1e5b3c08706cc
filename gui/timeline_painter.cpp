#include "timeline_painter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nice_ticks.hpp"
#include "text_format.hpp"

namespace simtrain::gui {

namespace {

const QColor header_background(247, 248, 250);
const QColor stage_background(233, 237, 243);
const QColor grid_color(236, 236, 236);
const QColor label_color(90, 90, 90);
const QColor path_color(214, 39, 40);
const QColor predecessor_color(255, 140, 0);

QString qt(const std::string& text) { return QString::fromStdString(text); }

class TimelinePainter {
public:
  TimelinePainter(QPainter& painter, QSizeF size, const TimelineModel& model, const TimelineLayout& layout,
                  double scroll_y)
      : p_(painter), size_(size), model_(model), layout_(layout), scroll_y_(scroll_y),
        plot_(TimelineLayout::header_width, ruler_height, size.width() - TimelineLayout::header_width,
              size.height() - ruler_height),
        t0_(layout.seconds_at(plot_.left())), t1_(layout.seconds_at(plot_.right())) {}

  void paint(const TimelineHighlight& highlight, const QString& title) {
    p_.fillRect(QRectF(QPointF(0, 0), size_), Qt::white);
    p_.setClipRect(plot_);
    paint_grid();
    const std::vector<TimelineRow>& rows = layout_.rows();
    for (size_t i = layout_.first_row_ending_below(scroll_y_); i < rows.size() && to_view(rows[i].y) < size_.height(); ++i)
      rows[i].rank < 0 ? paint_stage_header(rows[i]) : paint_rank_row(rows[i]);
    p_.setClipRect(plot_);
    paint_highlight(highlight);
    p_.setClipping(false);
    paint_ruler(title);
  }

private:
  double to_view(double content_y) const { return ruler_height + content_y - scroll_y_; }

  QRectF view_rect(const Rect& r) const { return {r.x, to_view(r.y), r.width, r.height}; }

  double major_step() const { return ruler_step_seconds(layout_); }

  void paint_grid() {
    const double step = major_step();
    p_.setPen(QPen(grid_color, 1));
    for (double t = std::ceil(t0_ / step) * step; t <= t1_; t += step) p_.drawLine(QPointF(layout_.x_of(t), plot_.top()), QPointF(layout_.x_of(t), size_.height()));
    p_.setPen(QPen(QColor(150, 150, 150), 1, Qt::DashLine));
    const double end = layout_.x_of(model_.step_seconds());
    p_.drawLine(QPointF(end, plot_.top()), QPointF(end, size_.height()));
  }

  void paint_ruler(const QString& title) {
    const QRectF ruler(0, 0, size_.width(), ruler_height);
    p_.fillRect(ruler, header_background);
    p_.setPen(QColor(200, 200, 200));
    p_.drawLine(QPointF(0, ruler_height - 0.5), QPointF(size_.width(), ruler_height - 0.5));
    QFont bold = p_.font();
    bold.setBold(true);
    p_.setFont(bold);
    p_.setPen(Qt::black);
    const QRectF title_box(6, 0, TimelineLayout::header_width - 10, ruler_height);
    p_.drawText(title_box, Qt::AlignVCenter | Qt::AlignLeft,
                p_.fontMetrics().elidedText(title, Qt::ElideRight, static_cast<int>(title_box.width())));
    bold.setBold(false);
    p_.setFont(bold);
    p_.setClipRect(QRectF(plot_.left(), 0, plot_.width(), ruler_height));
    const double step = major_step();
    p_.setPen(label_color);
    for (double t = std::floor(t0_ / step) * step; t <= t1_ + step; t += step / 5) {
      const double x = layout_.x_of(t);
      const bool major = std::fabs(std::remainder(t, step)) < step * 1e-6;
      p_.drawLine(QPointF(x, ruler_height - (major ? 8 : 4)), QPointF(x, ruler_height));
    }
    for (const RulerLabel& label : ruler_labels(layout_, plot_.left(), plot_.right(), QFontMetricsF(p_.font())))
      p_.drawText(label.rect, Qt::AlignLeft | Qt::AlignVCenter, label.text);
    p_.setClipping(false);
  }

  void paint_stage_header(const TimelineRow& row) {
    p_.setClipping(false);
    const QRectF band(0, to_view(row.y), size_.width(), row.height);
    p_.fillRect(band, stage_background);
    const int ranks = layout_.rank_count(row.stage);
    QString text = QString("stage %1").arg(row.stage);
    if (ranks > 1)
      text = layout_.expanded(row.stage)
                 ? QString::fromUtf8("▾ %1: all %2 ranks (click to show tp 0, dp 0 only)").arg(text).arg(ranks)
                 : QString::fromUtf8("▸ %1: tp 0, dp 0 of %2 ranks (click to show all)").arg(text).arg(ranks);
    p_.setPen(Qt::black);
    p_.drawText(band.adjusted(6, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
  }

  void paint_rank_row(const TimelineRow& row) {
    const double top = to_view(row.y), height = row.height - TimelineLayout::row_gap;
    p_.setClipRect(plot_);
    const std::optional<int> host_lane = layout_.host_lane();
    // Idle is the GPU's: shaded over the stream lanes only.
    paint_idle(row.rank, top, host_lane ? layout_.lane_offset(*host_lane) - 1 : height);
    for (int lane = 0; lane < static_cast<int>(model_.lanes().size()); ++lane)
      paint_lane(row.rank, lane, top + layout_.lane_offset(lane), layout_.lane_height(lane) - 1);
    if (host_lane) paint_host_lane(row.rank, top + layout_.lane_offset(*host_lane), layout_.lane_height(*host_lane) - 1);
    p_.setClipping(false);
    const QRectF label(0, top, TimelineLayout::header_width, height);
    p_.fillRect(label, header_background);
    const RankCoord& c = model_.program().coords[row.rank];
    const QRectF text = label.adjusted(8, 0, -6, 0);
    p_.setPen(Qt::black);
    p_.drawText(text, Qt::AlignVCenter | Qt::AlignLeft,
                QString("rank %1  tp %2 dp %3").arg(row.rank).arg(c.tp).arg(c.dp));
    p_.setPen(label_color);
    p_.drawText(text, Qt::AlignVCenter | Qt::AlignRight, qt("idle " + format_percent(model_.idle_fraction(row.rank))));
  }

  void paint_idle(int rank, double top, double height) {
    const std::vector<Span>& spans = model_.idle_spans(rank);
    auto it = std::upper_bound(spans.begin(), spans.end(), t0_,
                               [](double t, const Span& s) { return t < s.end_seconds; });
    for (; it != spans.end() && it->start_seconds < t1_; ++it) {
      const double x0 = std::max(layout_.x_of(it->start_seconds), plot_.left() - 1);
      const double x1 = std::min(layout_.x_of(it->end_seconds), plot_.right() + 1);
      if (x1 - x0 < 1) continue;  // the boxes around it cover it
      const QRectF box(x0, top, x1 - x0, height);
      p_.fillRect(box, idle_color());
      p_.fillRect(box, idle_hatch());
      const QString label = qt("idle " + format_percent((it->end_seconds - it->start_seconds) / model_.step_seconds()));
      if (box.width() > p_.fontMetrics().horizontalAdvance(label) + 10) {
        p_.setPen(label_color);
        p_.drawText(box, Qt::AlignCenter, label);
      }
    }
  }

  // The colour of what fills most of [from, to) among lane tasks [first, last)
  // (at most 64 of them looked at, evenly spread, for columns of thousands).
  QColor dominant_color(const std::vector<int>& tasks, size_t first, size_t last, double from, double to) const {
    std::vector<std::pair<QRgb, double>> seconds_of_color;
    const size_t stride = (last - first + 63) / 64;
    for (size_t i = first; i < last; i += stride) {
      const TaskTiming& t = model_.timing(tasks[i]);
      const QRgb color = task_color(model_.program(), model_.program().tasks[tasks[i]]).rgb();
      const double seconds = std::min(t.end, to) - std::max(t.start, from);
      auto it = std::find_if(seconds_of_color.begin(), seconds_of_color.end(), [&](const auto& c) { return c.first == color; });
      if (it == seconds_of_color.end()) seconds_of_color.push_back({color, seconds});
      else it->second += seconds;
    }
    return QColor(std::max_element(seconds_of_color.begin(), seconds_of_color.end(), [](const auto& a, const auto& b) {
                    return a.second < b.second;
                  })->first);
  }

  void paint_lane(int rank, int lane, double top, double height) {
    const std::vector<int>& tasks = model_.lane_tasks(rank, lane);
    const double pps = layout_.pixels_per_second();
    // Adjacent one-pixel columns of one colour are drawn as one rectangle.
    QRectF run;
    QColor run_color;
    auto flush = [&] {
      if (run.width() > 0) p_.fillRect(run, run_color);
      run = {};
    };
    double columns_end = -std::numeric_limits<double>::infinity();  // right edge of the one-pixel columns drawn
    for (size_t i = model_.first_ending_after(rank, lane, t0_); i < tasks.size();) {
      const Task& task = model_.program().tasks[tasks[i]];
      const TaskTiming& t = model_.timing(task.id);
      if (t.start > t1_) break;
      const double x = layout_.x_of(t.start), width = (t.end - t.start) * pps;
      if (width >= 1) {
        const QColor color = task_color(model_.program(), task);
        flush();
        // A one-pixel gap keeps neighbours apart.
        p_.fillRect(QRectF(x, top, width >= 3 ? width - 1 : width, height), color);
        if (is_compute(task.kind) && task.microbatch >= 0)
          paint_box_label(QRectF(x, top, width, height), color, task.microbatch);
        ++i;
        continue;
      }
      // What overlaps this pixel column becomes one column, in the colour of
      // what fills most of it: boxes of two kinds taking turns (forwards and
      // TP collectives) read as the longer kind, not as alternating columns
      // whose mix looks like a third colour. The last one, if it reaches
      // beyond, is part of the next column too.
      const double column = std::max(std::floor(x), columns_end);
      const double column_start = layout_.seconds_at(column), column_end = layout_.seconds_at(column + 1);
      size_t next = model_.first_starting_from(rank, lane, i + 1, column_end);
      const QColor column_color = dominant_color(tasks, i, next, column_start, column_end);
      if (run.width() > 0 && run.right() == column && run_color == column_color) {
        run.setRight(column + 1);
      } else {
        flush();
        run = QRectF(column, top, 1, height);
        run_color = column_color;
      }
      columns_end = column + 1;
      if (model_.timing(tasks[next - 1]).end > column_end) --next;
      i = next;
    }
    flush();
  }

  // The host's slices follow one another: each wide enough is drawn apart (a
  // one-pixel gap between neighbours), narrower ones merge into one run.
  void paint_host_lane(int rank, double top, double height) {
    const std::vector<HostSlice>& slices = model_.host_slices(rank);
    const double pps = layout_.pixels_per_second();
    QRectF run;
    auto flush = [&] {
      if (run.width() > 0) p_.fillRect(run, host_color());
      run = {};
    };
    for (size_t i = model_.first_host_slice_ending_after(rank, t0_); i < slices.size(); ++i) {
      const HostSlice& s = slices[i];
      if (s.start_seconds > t1_) break;
      const double x = layout_.x_of(s.start_seconds), width = (s.end_seconds - s.start_seconds) * pps;
      if (width >= 3) {
        flush();
        p_.fillRect(QRectF(x, top, width - 1, height), host_color());
      } else if (run.width() > 0 && x <= run.right() + 1) {
        run.setRight(std::max(run.right(), x + std::max(width, 1.0)));
      } else {
        flush();
        run = QRectF(x, top, std::max(width, 1.0), height);
      }
    }
    flush();
  }

  void paint_box_label(const QRectF& box, const QColor& color, int microbatch) {
    const QString label = QString::number(microbatch);
    if (box.width() < p_.fontMetrics().horizontalAdvance(label) + 4) return;
    p_.setPen(color.lightness() > 150 ? QColor(30, 30, 30) : Qt::white);
    p_.drawText(box, Qt::AlignCenter, label);
  }

  void outline(int task, const QColor& color) {
    const std::optional<Rect> r = layout_.task_rect(task);
    if (!r) return;
    p_.setPen(QPen(color, 2));
    p_.setBrush(Qt::NoBrush);
    p_.drawRect(view_rect(*r).adjusted(-1, -1, 1, 1));
  }

  // A line from the end of `from` to the start of `to`, where both are shown.
  void connect(int from, int to, const QColor& color) {
    const std::optional<Rect> a = layout_.task_rect(from), b = layout_.task_rect(to);
    if (!a || !b) return;
    p_.setPen(QPen(color, 1.5));
    p_.drawLine(QPointF(a->x + a->width, to_view(a->y + a->height / 2)), QPointF(b->x, to_view(b->y + b->height / 2)));
  }

  void paint_highlight(const TimelineHighlight& h) {
    p_.setRenderHint(QPainter::Antialiasing, true);
    const std::vector<int>& path = h.critical_path;
    for (size_t i = 0; i < path.size(); ++i) {
      if (i > 0) connect(path[i - 1], path[i], path_color);
      outline(path[i], path_color);
    }
    for (int p : h.predecessors) {
      connect(p, h.selected, predecessor_color);
      outline(p, predecessor_color);
    }
    if (h.selected >= 0) outline(h.selected, Qt::black);
    p_.setRenderHint(QPainter::Antialiasing, false);
  }

  QPainter& p_;
  QSizeF size_;
  const TimelineModel& model_;
  const TimelineLayout& layout_;
  double scroll_y_;
  QRectF plot_;
  double t0_, t1_;  // the time range in view
};

}  // namespace

QColor task_color(const Program& program, const Task& task) {
  return box_color(box_kind(task), task.stage < 0 ? 0 : task.stage / program.pipeline_size);
}

QColor box_color(BoxKind kind, int chunk) {
  static const QColor colors[box_kind_count] = {
      QColor(91, 143, 249),   // forward: blue
      QColor(90, 216, 166),   // backward: green
      QColor(38, 154, 110),   // weight grad: dark green
      QColor(179, 140, 230),  // recompute: lavender
      QColor(246, 189, 22),   // optimizer: yellow
      QColor(232, 104, 74),   // TP: red
      QColor(255, 157, 77),   // PP: orange
      QColor(109, 200, 236),  // DP: cyan
      QColor(214, 88, 172),   // CP (K/V exchange): magenta
      QColor(150, 105, 70),   // EP (token dispatch and combine): brown
  };
  const QColor& color = colors[static_cast<int>(kind)];
  return chunk % 2 ? color.darker(125) : color;
}

QColor host_color() { return QColor(112, 128, 144); }  // slate grey: no kind of GPU work has it

QColor idle_color() { return QColor(243, 243, 243); }

QBrush idle_hatch() { return QBrush(QColor(196, 196, 196), Qt::BDiagPattern); }

double ruler_step_seconds(const TimelineLayout& layout) { return nice_step(110 / layout.pixels_per_second()); }

std::vector<RulerLabel> ruler_labels(const TimelineLayout& layout, double left, double right, const QFontMetricsF& metrics) {
  constexpr double pad = 3;  // between a tick and its label
  const double step = ruler_step_seconds(layout);
  const double t0 = layout.seconds_at(left), t1 = layout.seconds_at(right);
  std::vector<RulerLabel> labels;
  for (double k = std::ceil(t0 / step - 1e-9); k * step <= t1 + step * 1e-9; ++k) {
    const double x = layout.x_of(k * step);
    const QString text = QString::fromStdString(format_duration(k * step));
    const double width = metrics.horizontalAdvance(text);
    // Right of its tick; left of it where the plot ends sooner, and none
    // where that would run into the label before it.
    QRectF rect(x + pad, 0, width, ruler_height - 8);
    if (rect.right() > right) rect.moveRight(x - pad);
    if (rect.left() < left || (!labels.empty() && rect.left() < labels.back().rect.right() + pad)) continue;
    labels.push_back({text, rect});
  }
  return labels;
}

void paint_timeline(QPainter& painter, QSizeF size, const TimelineModel& model, const TimelineLayout& layout,
                    double scroll_y, const TimelineHighlight& highlight, const QString& title) {
  painter.save();
  TimelinePainter(painter, size, model, layout, scroll_y).paint(highlight, title);
  painter.restore();
}

}  // namespace simtrain::gui
