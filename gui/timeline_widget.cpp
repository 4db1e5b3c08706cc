#include "timeline_widget.hpp"

#include <algorithm>
#include <cmath>

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include "task_description.hpp"

namespace simtrain::gui {

namespace {
constexpr int horizontal_range = 1'000'000;  // scroll bar units per step
constexpr double max_pixels_per_second = 1e12;
}  // namespace

TimelineWidget::TimelineWidget(TimeScale& scale, QWidget* parent) : QAbstractScrollArea(parent), scale_(scale) {
  viewport()->setMouseTracking(true);
  viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::StrongFocus);
  setFrameShape(QFrame::NoFrame);
  setMinimumHeight(120);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  connect(&scale_, &TimeScale::changed, this, &TimelineWidget::on_scale_changed);
  connect(horizontalScrollBar(), &QScrollBar::valueChanged, this, &TimelineWidget::on_horizontal_scroll);
  connect(verticalScrollBar(), &QScrollBar::valueChanged, viewport(), qOverload<>(&QWidget::update));
}

void TimelineWidget::set_model(std::shared_ptr<const TimelineModel> model, const QString& title) {
  model_ = std::move(model);
  title_ = title;
  highlight_ = {};
  layout_ = model_ ? std::make_unique<TimelineLayout>(*model_) : nullptr;
  if (layout_) {
    if (all_ranks_shown_) layout_->expand_all(true);
    if (critical_path_shown_) highlight_.critical_path = model_->critical_path();
  }
  on_scale_changed();
  emit rows_changed();
}

int TimelineWidget::rows_height() const {
  if (!layout_) return QWIDGETSIZE_MAX;
  return static_cast<int>(ruler_height + layout_->natural_content_height()) + horizontalScrollBar()->sizeHint().height() +
         2;
}

void TimelineWidget::select_task(int task) {
  highlight_.selected = task;
  highlight_.predecessors = model_ && task >= 0 ? model_->predecessors(task) : std::vector<int>{};
  emit task_selected(model_ && task >= 0 ? QString::fromStdString(describe_task(model_->step(), task)) : QString());
  viewport()->update();
}

void TimelineWidget::show_critical_path(bool shown) {
  critical_path_shown_ = shown;
  highlight_.critical_path = shown && model_ ? model_->critical_path() : std::vector<int>{};
  viewport()->update();
}

void TimelineWidget::show_all_ranks(bool shown) {
  all_ranks_shown_ = shown;
  if (layout_) layout_->expand_all(shown);
  update_scroll_bars();
  emit rows_changed();
  viewport()->update();
}

double TimelineWidget::plot_width() const {
  return std::max(1.0, viewport()->width() - TimelineLayout::header_width);
}

void TimelineWidget::fit_time(double seconds) {
  if (seconds <= 0) return;
  const double margin = 0.01 * seconds;
  scale_.set(-margin, plot_width() / (seconds + 2 * margin));
}

double TimelineWidget::scroll_y() const { return verticalScrollBar()->value(); }

void TimelineWidget::paint_view(QPainter& painter) const {
  if (!model_) return;
  paint_timeline(painter, viewport()->size(), *model_, *layout_, scroll_y(), highlight_, title_);
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter painter(viewport());
  if (!model_) {
    painter.fillRect(viewport()->rect(), palette().base());
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(viewport()->rect(), Qt::AlignCenter, title_);
    return;
  }
  paint_view(painter);
}

void TimelineWidget::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  update_scroll_bars();
}

void TimelineWidget::on_scale_changed() {
  if (layout_) layout_->set_scale(scale_.origin_seconds(), scale_.pixels_per_second());
  update_scroll_bars();
  viewport()->update();
}

void TimelineWidget::update_scroll_bars() {
  // Rows shorter than the viewport grow to fill it (up to TimelineLayout::max_lane_scale).
  if (layout_) {
    const double scale = layout_->lane_scale_to_fill(viewport()->height() - ruler_height);
    if (scale != layout_->lane_scale()) layout_->set_lane_scale(scale);
  }
  syncing_scroll_bars_ = true;
  const double content = layout_ ? layout_->content_height() : 0;
  verticalScrollBar()->setRange(0, std::max(0, static_cast<int>(content + ruler_height) - viewport()->height()));
  verticalScrollBar()->setPageStep(viewport()->height());
  verticalScrollBar()->setSingleStep(20);
  const double step = model_ ? model_->step_seconds() : 0;
  if (step > 0) {
    const double visible = plot_width() / scale_.pixels_per_second() / step;
    const int page = static_cast<int>(std::clamp(visible, 0.0, 1.0) * horizontal_range);
    horizontalScrollBar()->setRange(0, horizontal_range - page);
    horizontalScrollBar()->setPageStep(page);
    horizontalScrollBar()->setValue(static_cast<int>(scale_.origin_seconds() / step * horizontal_range));
  }
  syncing_scroll_bars_ = false;
}

void TimelineWidget::on_horizontal_scroll(int value) {
  if (syncing_scroll_bars_ || !model_) return;
  scale_.set(value * model_->step_seconds() / horizontal_range, scale_.pixels_per_second());
}

void TimelineWidget::set_scale_clamped(double origin_seconds, double pixels_per_second) {
  if (!model_ || model_->step_seconds() <= 0) return;
  const double step = model_->step_seconds();
  pixels_per_second = std::clamp(pixels_per_second, plot_width() / step / 4, max_pixels_per_second);
  const double visible = plot_width() / pixels_per_second;
  scale_.set(std::clamp(origin_seconds, -visible / 2, step - visible / 2), pixels_per_second);
}

void TimelineWidget::zoom_at(double factor, double x) {
  x = std::max(x, TimelineLayout::header_width);
  const double pixels_per_second = scale_.pixels_per_second() * factor;
  const double seconds = layout_->seconds_at(x);  // stays under the cursor
  set_scale_clamped(seconds - (x - TimelineLayout::header_width) / pixels_per_second, pixels_per_second);
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  if (!layout_ || event->modifiers() & (Qt::ShiftModifier | Qt::ControlModifier)) {
    QAbstractScrollArea::wheelEvent(event);  // scroll the rows
    return;
  }
  const QPoint pixels = event->pixelDelta(), angle = event->angleDelta();
  const double notches = !pixels.isNull() ? pixels.y() / 60.0 : angle.y() / 120.0;
  zoom_at(std::pow(2.0, notches / 4), event->position().x());  // four notches double the scale
  if (angle.x() != 0) set_scale_clamped(scale_.origin_seconds() - angle.x() / scale_.pixels_per_second(), scale_.pixels_per_second());
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  press_position_ = last_drag_position_ = event->position().toPoint();
  dragging_ = false;
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton) || !layout_) return;
  const QPoint position = event->position().toPoint();
  if (!dragging_ && (position - press_position_).manhattanLength() < 4) return;
  if (!dragging_) viewport()->setCursor(Qt::ClosedHandCursor);
  dragging_ = true;
  const QPoint delta = position - last_drag_position_;
  last_drag_position_ = position;
  set_scale_clamped(scale_.origin_seconds() - delta.x() / scale_.pixels_per_second(), scale_.pixels_per_second());
  verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  viewport()->unsetCursor();
  if (!dragging_ && event->button() == Qt::LeftButton) click_at(event->position().toPoint());
  dragging_ = false;
}

void TimelineWidget::click_at(QPoint position) {
  if (!layout_ || position.y() < ruler_height) return;
  const double y = position.y() - ruler_height + scroll_y();
  const size_t row = layout_->first_row_ending_below(y);
  if (row < layout_->rows().size() && layout_->rows()[row].rank < 0) {
    const int stage = layout_->rows()[row].stage;
    layout_->expand(stage, !layout_->expanded(stage));
    update_scroll_bars();
    emit rows_changed();
    viewport()->update();
    return;
  }
  int task = -1;
  if (position.x() > TimelineLayout::header_width) {
    task = layout_->task_at(position.x(), y);
    if (const HostSlice* launch = task < 0 ? layout_->host_slice_at(position.x(), y) : nullptr)
      task = launch->task;  // a host slice selects the task it launched
  }
  select_task(task);
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
  const double center = TimelineLayout::header_width + plot_width() / 2;
  if (event->key() == Qt::Key_Escape) select_task(-1);
  else if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal) zoom_at(1.5, center);
  else if (event->key() == Qt::Key_Minus) zoom_at(1 / 1.5, center);
  else QAbstractScrollArea::keyPressEvent(event);
}

bool TimelineWidget::viewportEvent(QEvent* event) {
  if (event->type() != QEvent::ToolTip || !layout_) return QAbstractScrollArea::viewportEvent(event);
  const auto* help = static_cast<QHelpEvent*>(event);
  const bool in_plot = help->pos().x() > TimelineLayout::header_width && help->pos().y() > ruler_height;
  const double x = help->pos().x(), y = help->pos().y() - ruler_height + scroll_y();
  const int task = in_plot ? layout_->task_at(x, y) : -1;
  const HostSlice* launch = in_plot && task < 0 ? layout_->host_slice_at(x, y) : nullptr;
  if (task >= 0)
    QToolTip::showText(help->globalPos(), QString::fromStdString(describe_task(model_->step(), task)), viewport());
  else if (launch)
    QToolTip::showText(help->globalPos(), QString::fromStdString(describe_host_launch(model_->step(), *launch)), viewport());
  else
    QToolTip::hideText();
  return true;
}

}  // namespace simtrain::gui
