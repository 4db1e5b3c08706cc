#include "pareto_view.hpp"

#include <algorithm>
#include <cmath>

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "sim/base/text_format.hpp"
#include "text_format.hpp"

namespace simtrain::gui {

namespace {

constexpr double point_radius = 4;
constexpr double hit_radius = 7;
const QColor front_color(31, 119, 180);
const QColor other_color(170, 170, 170);
const QColor own_color(214, 39, 40);

QString qt(const std::string& text) { return QString::fromStdString(text); }

}  // namespace

ParetoView::ParetoView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(240, 180);
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

QRectF ParetoView::plot_rect() const { return QRectF(64, 28, width() - 80, height() - 68); }

QPointF ParetoView::position_of(int index) const {
  const SearchPoint& p = results_.points[index];
  const QRectF r = plot_rect();
  return {r.left() + (p.step_seconds - min_seconds_) / (max_seconds_ - min_seconds_) * r.width(),
          r.bottom() - (p.cost - min_cost_) / (max_cost_ - min_cost_) * r.height()};
}

std::optional<int> ParetoView::point_at(QPointF position) const {
  std::optional<int> nearest;
  double nearest_distance = hit_radius;
  for (int i = 0; i < int(results_.points.size()); ++i) {
    const QPointF d = position_of(i) - position;
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
  p.setRenderHint(QPainter::Antialiasing, true);
  const QRectF r = plot_rect();
  p.setPen(QColor(90, 90, 90));
  p.drawRect(r);
  p.drawText(QRectF(r.left(), r.bottom() + 18, r.width(), 18), Qt::AlignCenter, tr("step time"));
  p.drawText(QRectF(r.left(), r.bottom() + 2, r.width() / 2, 16), Qt::AlignLeft,
             qt(format_duration(min_seconds_)));
  p.drawText(QRectF(r.center().x(), r.bottom() + 2, r.width() / 2, 16), Qt::AlignRight,
             qt(format_duration(max_seconds_)));
  const auto cost_text = [](double cost) { return qt(with_commas(cost, cost < 100 ? 2 : 0)); };
  p.drawText(QRectF(4, 4, width() - 8, 20), Qt::AlignLeft,
             tr("cost of the token budget (%1) · blue: Pareto front · red ring: the scenario's own")
                 .arg(qt(results_.cost_unit)));
  p.drawText(QRectF(0, r.top(), r.left() - 4, 16), Qt::AlignRight, cost_text(max_cost_));
  p.drawText(QRectF(0, r.bottom() - 16, r.left() - 4, 16), Qt::AlignRight, cost_text(min_cost_));
  // The front, cheapest-slowest to fastest-dearest, joined.
  std::vector<int> front;
  for (int i = 0; i < int(results_.points.size()); ++i)
    if (results_.points[i].on_pareto_front) front.push_back(i);
  std::sort(front.begin(), front.end(),
            [&](int a, int b) { return results_.points[a].step_seconds < results_.points[b].step_seconds; });
  p.setPen(QPen(front_color, 1.5));
  for (size_t i = 1; i < front.size(); ++i) p.drawLine(position_of(front[i - 1]), position_of(front[i]));
  for (int pass : {0, 1})  // the others first, so the front is drawn over them
    for (int i = 0; i < int(results_.points.size()); ++i) {
      const SearchPoint& point = results_.points[i];
      if (point.on_pareto_front != (pass == 1)) continue;
      p.setPen(Qt::NoPen);
      p.setBrush(point.on_pareto_front ? front_color : other_color);
      p.drawEllipse(position_of(i), point_radius, point_radius);
    }
  p.setBrush(Qt::NoBrush);
  for (int i = 0; i < int(results_.points.size()); ++i)
    if (results_.points[i].scenario_own) {
      p.setPen(QPen(own_color, 2));
      p.drawEllipse(position_of(i), point_radius + 3, point_radius + 3);
    }
  if (chosen_) {
    p.setPen(QPen(Qt::black, 2));
    p.drawEllipse(position_of(*chosen_), point_radius + 5, point_radius + 5);
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
