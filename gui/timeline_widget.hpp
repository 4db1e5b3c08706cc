#pragma once
// The timeline of one step, interactive: wheel zooms around the cursor, drag
// pans (both ways), hovering a box shows what it is, clicking selects it and
// outlines its predecessors (clicking a host slice selects the task it
// launched), clicking a stage header shows or hides all its ranks. Drawing is timeline_painter's; geometry is timeline_layout's.
#include <memory>

#include <QAbstractScrollArea>

#include "time_scale.hpp"
#include "timeline_painter.hpp"

namespace simtrain::gui {

class TimelineWidget : public QAbstractScrollArea {
  Q_OBJECT
public:
  explicit TimelineWidget(TimeScale& scale, QWidget* parent = nullptr);

  void set_model(std::shared_ptr<const TimelineModel> model, const QString& title);
  const TimelineModel* model() const { return model_.get(); }
  const TimelineLayout* timeline_layout() const { return layout_.get(); }

  void select_task(int task);  // -1 clears
  const TimelineHighlight& highlight() const { return highlight_; }
  void show_critical_path(bool shown);
  void show_all_ranks(bool shown);  // else what the layout starts with
  // Makes [0, seconds] fill the width.
  void fit_time(double seconds);

  double scroll_y() const;
  // What is in view, at the painter's origin, viewport-sized (for export).
  void paint_view(QPainter& painter) const;

  int rows_height() const;  // what shows every row: ruler, rows, scroll bar

signals:
  void task_selected(const QString& description);  // empty when cleared
  void rows_changed();

protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool viewportEvent(QEvent* event) override;

private:
  void on_scale_changed();
  void update_scroll_bars();
  void on_horizontal_scroll(int value);
  void zoom_at(double factor, double x);
  void set_scale_clamped(double origin_seconds, double pixels_per_second);
  void click_at(QPoint position);
  double plot_width() const;

  TimeScale& scale_;
  std::shared_ptr<const TimelineModel> model_;
  std::unique_ptr<TimelineLayout> layout_;
  QString title_;
  TimelineHighlight highlight_;
  bool critical_path_shown_ = false;
  bool all_ranks_shown_ = false;
  QPoint press_position_, last_drag_position_;
  bool dragging_ = false;
  bool syncing_scroll_bars_ = false;
};

}  // namespace simtrain::gui
