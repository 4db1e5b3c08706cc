#pragma once
// Draws a timeline with QPainter, onto the widget, a PNG image or an SVG.
// Only the rows and the time range in view are drawn, and boxes narrower than
// a pixel are merged into one-pixel columns (found by binary search), each in
// the colour of what fills most of it, so a 1,024-rank step draws about as
// fast as a small one and its kinds stay apart.
#include <vector>

#include <QBrush>
#include <QColor>
#include <QFontMetricsF>
#include <QPainter>
#include <QString>

#include "timeline_layout.hpp"

namespace simtrain::gui {

QColor box_color(BoxKind kind, int chunk = 0);  // odd model chunks (interleaving) a shade darker
QColor task_color(const Program& program, const Task& task);  // its kind's, of its model chunk
QColor host_color();                             // a host launching a task (its slice)
QColor idle_color();                             // the base of the bubble shading
QBrush idle_hatch();                             // drawn over it

struct TimelineHighlight {
  int selected = -1;
  std::vector<int> predecessors;  // of the selected task
  std::vector<int> critical_path;
};

constexpr double ruler_height = 26;

// Paints a `size` area at the painter's origin: the ruler (with `title` above
// the row labels) on top, row labels on the left, rows scrolled by `scroll_y`.
void paint_timeline(QPainter& painter, QSizeF size, const TimelineModel& model, const TimelineLayout& layout,
                    double scroll_y, const TimelineHighlight& highlight, const QString& title);

// The time between major ticks of the ruler: a 1-2-5 step about 110 pixels wide.
double ruler_step_seconds(const TimelineLayout& layout);

struct RulerLabel {
  QString text;  // "20.0 ms"
  QRectF rect;   // in the ruler, as wide as the text
};
// The labels of the major ticks between x = `left` and `right`, each beside
// its tick and wholly within them (the last one left of its tick where it
// would not fit right of it).
std::vector<RulerLabel> ruler_labels(const TimelineLayout& layout, double left, double right,
                                     const QFontMetricsF& metrics);

}  // namespace simtrain::gui
