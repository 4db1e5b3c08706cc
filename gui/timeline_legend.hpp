#pragma once
// The legend above the timelines: one swatch per kind of box, one for idle
// time, when a timeline has host rows one for the host's launches and, when
// a timeline interleaves model chunks, one for the darker shade their odd
// chunks are drawn in. It wraps onto more rows rather than cut entries off.
#include <vector>

#include <QColor>
#include <QFontMetricsF>
#include <QPainter>
#include <QRectF>
#include <QString>

namespace simtrain::gui {

struct LegendEntry {
  QString label;
  std::vector<QColor> swatch;  // side by side in the swatch: one colour, or a shade and its darker one
  bool hatched = false;        // idle
};

// `model_chunks`: the most model chunks per GPU of the timelines shown (1 without interleaving);
// `hosts`: whether one of them shows its hosts (TimelineModel::hosts_simulated).
std::vector<LegendEntry> legend_entries(int model_chunks, bool hosts = false);

// Where each entry goes (swatch and label), rows wrapped to `width`, from (0, 0).
std::vector<QRectF> legend_rects(const std::vector<LegendEntry>& entries, const QFontMetricsF& metrics, double width);
double legend_height(const std::vector<LegendEntry>& entries, const QFontMetricsF& metrics, double width);
// The widest entry with its margins: at least this wide, no entry is cut off.
double legend_minimum_width(const std::vector<LegendEntry>& entries, const QFontMetricsF& metrics);

void paint_legend(QPainter& painter, const std::vector<LegendEntry>& entries, double width);

}  // namespace simtrain::gui
