#include "pareto_view.hpp"

#include <algorithm>
#include <cmath>

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "nice_ticks.hpp"
#include "sim/base/text_format.hpp"
#include "text_format.hpp"

namespace simtrain::gui {

namespace {

constexpr double point_radius = 4;
constexpr double hit_radius = 7;
constexpr double margin = 8, gap = 4;
// At most one tick per this many pixels: x labels ("12.5 ms") need more room than y's.
constexpr double x_tick_spacing = 90, y_tick_spacing = 50;
const QColor front_color(31, 119, 180);
const QColor other_color(170, 170, 170);
const QColor own_color(214, 39, 40);
const QColor axis_color(90, 90, 90);
const QColor grid_color(235, 235, 235);

QString qt(const std::string& text) { return QString::fromStdString(text); }

int tick_count(double pixels, double spacing) { return std::max(2, static_cast<int>(pixels / spacing)); }

}  // namespace

ParetoView::ParetoView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ParetoView::set_results(SearchResults results) {
  results_ = std::move(results);
  chosen_.reset();
  if (!results_.points.empty()) {
    const auto [fastest, slowest] = std::minmax_element(
        results_.points.begin(), results_.points.end(), [](const auto& a, const auto& b) { return a.step_seconds < b.step_seconds; });
    const auto [cheapest, dearest] = std::minmax_element(
        results_.points.begin(), results_.points.end(), [](const auto& a, const auto& b) { return a.cost < b.cost; });
    // A margin of 5 % of the span (or of the value, for a single point) keeps points off the axes.
    const auto padded = [](double low, double high, double& from, double& to) {
      const double margin = 0.05 * (high > low ? high - low : std::max(high, 1e-12));
      from = low - margin;
      to = high + margin;
    };
    padded(fastest->step_seconds, slowest->step_seconds, min_seconds_, max_seconds_);
    padded(cheapest->cost, dearest->cost, min_cost_, max_cost_);
  }
  update();
}

ParetoView::Layout ParetoView::layout() const {
  const QFontMetricsF metrics(font());
  const double line = metrics.height();
  Layout l;
  l.caption = tr("cost of the token budget (%1) · blue: Pareto front · red ring: the scenario's own")
                  .arg(qt(results_.cost_unit));
  const double text_width = std::max(1.0, width() - 2 * margin);
  l.caption_rect = QRectF(margin, margin / 2, text_width,
                          metrics.boundingRect(QRectF(0, 0, text_width, 1e6), Qt::TextWordWrap, l.caption).height());
  // Half a line above the plot and below it: the labels of ticks at its edges are centred on them.
  const double top = l.caption_rect.bottom() + gap + line / 2;
  const double bottom = height() - margin - line - gap - line - gap - line / 2;

  const Ticks y = nice_ticks(min_cost_, max_cost_, tick_count(bottom - top, y_tick_spacing));
  double y_label_width = 0;
  for (double value : y.values) {
    l.y_ticks.push_back({value, qt(with_commas(value, tick_decimals(y.step))), 0, {}});
    y_label_width = std::max(y_label_width, metrics.horizontalAdvance(l.y_ticks.back().label));
  }
  // x in the unit of the slowest point, so that labels read "4 ms", "6 ms".
  const DurationUnit unit = duration_unit(max_seconds_);
  const double provisional_width = width() - 2 * margin - y_label_width - 2 * gap;
  const Ticks x = nice_ticks(min_seconds_ * unit.per_second, max_seconds_ * unit.per_second,
                             tick_count(provisional_width, x_tick_spacing));
  double x_label_width = 0;
  for (double value : x.values) {
    l.x_ticks.push_back({value / unit.per_second, QString::number(value, 'f', tick_decimals(x.step)) + " " + unit.name, 0, {}});
    x_label_width = std::max(x_label_width, metrics.horizontalAdvance(l.x_ticks.back().label));
  }
  // x labels are centred on their ticks: half the widest one beside the plot on either side.
  const double left = margin + std::max(y_label_width + 2 * gap, x_label_width / 2);
  const double right = width() - margin - x_label_width / 2;
  l.plot = QRectF(left, top, std::max(1.0, right - left), std::max(1.0, bottom - top));
  for (Tick& tick : l.y_ticks) {
    tick.at = l.plot.bottom() - (tick.value - min_cost_) / (max_cost_ - min_cost_) * l.plot.height();
    tick.label_rect = QRectF(l.plot.left() - 2 * gap - y_label_width, tick.at - line / 2, y_label_width, line);
  }
  for (Tick& tick : l.x_ticks) {
    tick.at = l.plot.left() + (tick.value - min_seconds_) / (max_seconds_ - min_seconds_) * l.plot.width();
    const double label_width = metrics.horizontalAdvance(tick.label);
    tick.label_rect = QRectF(tick.at - label_width / 2, l.plot.bottom() + line / 2 + gap, label_width, line);
  }
  l.x_title_rect = QRectF(l.plot.left(), l.plot.bottom() + line / 2 + gap + line + gap, l.plot.width(), line);
  return l;
}

QPointF ParetoView::position_in(const QRectF& plot, const SearchPoint& p) const {
  return {plot.left() + (p.step_seconds - min_seconds_) / (max_seconds_ - min_seconds_) * plot.width(),
          plot.bottom() - (p.cost - min_cost_) / (max_cost_ - min_cost_) * plot.height()};
}

QPointF ParetoView::position_of(int index) const { return position_in(layout().plot, results_.points[index]); }

std::optional<int> ParetoView::point_at(QPointF position) const {
  const QRectF plot = layout().plot;
  std::optional<int> nearest;
  double nearest_distance = hit_radius;
  for (int i = 0; i < int(results_.points.size()); ++i) {
    const QPointF d = position_in(plot, results_.points[i]) - position;
    const double distance = std::hypot(d.x(), d.y());
    if (distance <= nearest_distance) nearest = i, nearest_distance = distance;
  }
  return nearest;
}

void ParetoView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  if (results_.points.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("Open a search's results (File menu):\nsimtrain search ... --json results.json"));
    return;
  }
  const Layout l = layout();
  const QRectF& r = l.plot;
  p.setPen(grid_color);
  for (const Tick& tick : l.x_ticks) p.drawLine(QPointF(tick.at, r.top()), QPointF(tick.at, r.bottom()));
  for (const Tick& tick : l.y_ticks) p.drawLine(QPointF(r.left(), tick.at), QPointF(r.right(), tick.at));
  p.setPen(axis_color);
  p.drawRect(r);
  for (const Tick& tick : l.x_ticks) {
    p.drawLine(QPointF(tick.at, r.bottom()), QPointF(tick.at, r.bottom() + gap));
    p.drawText(tick.label_rect, Qt::AlignCenter, tick.label);
  }
  for (const Tick& tick : l.y_ticks) {
    p.drawLine(QPointF(r.left() - gap, tick.at), QPointF(r.left(), tick.at));
    p.drawText(tick.label_rect, Qt::AlignRight | Qt::AlignVCenter, tick.label);
  }
  p.drawText(l.x_title_rect, Qt::AlignCenter, tr("step time"));
  p.drawText(l.caption_rect, Qt::TextWordWrap, l.caption);
  p.setRenderHint(QPainter::Antialiasing, true);
  // The front, cheapest-slowest to fastest-dearest, joined.
  std::vector<int> front;
  for (int i = 0; i < int(results_.points.size()); ++i)
    if (results_.points[i].on_pareto_front) front.push_back(i);
  std::sort(front.begin(), front.end(),
            [&](int a, int b) { return results_.points[a].step_seconds < results_.points[b].step_seconds; });
  const auto at = [&](int i) { return position_in(r, results_.points[i]); };
  p.setPen(QPen(front_color, 1.5));
  for (size_t i = 1; i < front.size(); ++i) p.drawLine(at(front[i - 1]), at(front[i]));
  for (int pass : {0, 1})  // the others first, so the front is drawn over them
    for (int i = 0; i < int(results_.points.size()); ++i) {
      const SearchPoint& point = results_.points[i];
      if (point.on_pareto_front != (pass == 1)) continue;
      p.setPen(Qt::NoPen);
      p.setBrush(point.on_pareto_front ? front_color : other_color);
      p.drawEllipse(at(i), point_radius, point_radius);
    }
  p.setBrush(Qt::NoBrush);
  for (int i = 0; i < int(results_.points.size()); ++i)
    if (results_.points[i].scenario_own) {
      p.setPen(QPen(own_color, 2));
      p.drawEllipse(at(i), point_radius + 3, point_radius + 3);
    }
  if (chosen_) {
    p.setPen(QPen(Qt::black, 2));
    p.drawEllipse(at(*chosen_), point_radius + 5, point_radius + 5);
  }
}
void ParetoView::mouseMoveEvent(QMouseEvent* event) {
  const std::optional<int> hit = point_at(event->position());
  if (!hit) return QToolTip::hideText();
  const SearchPoint& point = results_.points[*hit];
  QToolTip::showText(event->globalPosition().toPoint(),
                     tr("#%1 %2\nstep %3, cost %4 %5%6\nclick: run it as A")
                         .arg(point.rank)
                         .arg(qt(point.label), qt(format_duration(point.step_seconds)), qt(with_commas(point.cost, 0)),
                              qt(results_.cost_unit), point.scenario_own ? tr(" (the scenario's own)") : QString()),
                     this);
}

void ParetoView::mousePressEvent(QMouseEvent* event) {
  const std::optional<int> hit = point_at(event->position());
  if (!hit) return;
  chosen_ = hit;
  update();
  emit point_chosen(*hit);
}

}  // namespace simtrain::gui
