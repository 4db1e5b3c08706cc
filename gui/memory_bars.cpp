#include "memory_bars.hpp"

#include <algorithm>

#include <QPainter>

namespace simtrain::gui {

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;
constexpr int bar_height = 16, bar_gap = 6, legend_height = 20, label_width = 58, value_width = 70;

struct Part {
  const char* label;
  QColor color;
  double MemoryBreakdown::*bytes;
};
const Part parts[] = {{"weights", QColor(91, 143, 249), &MemoryBreakdown::weights_bytes},
                      {"gradients", QColor(90, 216, 166), &MemoryBreakdown::gradients_bytes},
                      {"optimizer", QColor(246, 189, 22), &MemoryBreakdown::optimizer_bytes},
                      {"activations", QColor(232, 104, 74), &MemoryBreakdown::activations_bytes},
                      {"reserve", QColor(150, 150, 150), &MemoryBreakdown::reserve_bytes}};

}  // namespace

MemoryBars::MemoryBars(QWidget* parent) : QWidget(parent) {}

void MemoryBars::set_memory(const std::vector<MemoryBreakdown>& stages, double capacity_bytes) {
  stages_ = stages;
  capacity_bytes_ = capacity_bytes;
  updateGeometry();
  update();
}

QSize MemoryBars::sizeHint() const {
  return {320, legend_height + static_cast<int>(stages_.size()) * (bar_height + bar_gap) + 20};  // + capacity label
}

void MemoryBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  double x = 0;
  for (const Part& part : parts) {
    p.fillRect(QRectF(x, 4, 10, 10), part.color);
    p.drawText(QPointF(x + 14, 13), part.label);
    x += 22 + p.fontMetrics().horizontalAdvance(part.label);
  }
  double largest = capacity_bytes_;
  for (const MemoryBreakdown& m : stages_) largest = std::max(largest, m.total_bytes());
  const double bar_left = label_width, bar_width = std::max(10, width() - label_width - value_width);
  const double scale = bar_width / (largest * 1.02);
  for (size_t i = 0; i < stages_.size(); ++i) {
    const double top = legend_height + static_cast<double>(i) * (bar_height + bar_gap);
    const MemoryBreakdown& m = stages_[i];
    p.setPen(Qt::black);
    p.drawText(QRectF(0, top, label_width - 6, bar_height), Qt::AlignVCenter | Qt::AlignRight,
               QString("stage %1").arg(i));
    double left = bar_left;
    for (const Part& part : parts) {
      const double width = m.*part.bytes * scale;
      p.fillRect(QRectF(left, top, width, bar_height), part.color);
      left += width;
    }
    const bool fits = m.total_bytes() <= capacity_bytes_;
    p.setPen(fits ? Qt::black : QColor(180, 35, 24));
    p.drawText(QRectF(left + 4, top, value_width + bar_width, bar_height), Qt::AlignVCenter | Qt::AlignLeft,
               QString::number(m.total_bytes() / GiB, 'f', 1) + " GiB" + (fits ? "" : " OOM"));
  }
  const double capacity_x = bar_left + capacity_bytes_ * scale;
  const double bottom = legend_height + static_cast<double>(stages_.size()) * (bar_height + bar_gap);
  p.setPen(QPen(QColor(180, 35, 24), 1.5, Qt::DashLine));
  p.drawLine(QPointF(capacity_x, legend_height - 2), QPointF(capacity_x, bottom));
  p.drawText(QPointF(capacity_x - 60, bottom + 12), QString("%1 GiB GPU").arg(capacity_bytes_ / GiB, 0, 'f', 0));
}

}  // namespace simtrain::gui
