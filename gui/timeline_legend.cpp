#include "timeline_legend.hpp"

#include <algorithm>

#include "timeline_painter.hpp"

namespace simtrain::gui {

namespace {

constexpr double swatch_size = 12, swatch_gap = 4, entry_gap = 14, margin = 8, row_gap = 3;

double swatch_width(const LegendEntry& entry) { return swatch_size * static_cast<double>(entry.swatch.size()); }

double entry_width(const LegendEntry& entry, const QFontMetricsF& metrics) {
  return swatch_width(entry) + swatch_gap + metrics.horizontalAdvance(entry.label);
}

}  // namespace

std::vector<LegendEntry> legend_entries(int model_chunks, bool hosts) {
  std::vector<LegendEntry> entries;
  for (int k = 0; k < box_kind_count; ++k)
    entries.push_back({to_label(static_cast<BoxKind>(k)), {box_color(static_cast<BoxKind>(k))}});
  entries.push_back({"idle", {idle_color()}, true});
  if (hosts) entries.push_back({"host launching kernels", {host_color()}});
  if (model_chunks > 1) {
    const QString chunks = model_chunks == 2 ? "2nd model chunk" : "2nd, 4th, … model chunks";
    entries.push_back({QString("darker: %1 on each GPU (interleaved)").arg(chunks),
                       {box_color(BoxKind::forward), box_color(BoxKind::forward, 1)}});
  }
  return entries;
}

std::vector<QRectF> legend_rects(const std::vector<LegendEntry>& entries, const QFontMetricsF& metrics, double width) {
  std::vector<QRectF> rects;
  double x = margin, y = row_gap;
  for (const LegendEntry& entry : entries) {
    const double entry_width_px = entry_width(entry, metrics);
    if (x > margin && x + entry_width_px > width - margin) {  // the next row (a row's first entry goes whatever its width)
      x = margin;
      y += metrics.height() + row_gap;
    }
    rects.emplace_back(x, y, entry_width_px, metrics.height());
    x += entry_width_px + entry_gap;
  }
  return rects;
}

double legend_height(const std::vector<LegendEntry>& entries, const QFontMetricsF& metrics, double width) {
  const std::vector<QRectF> rects = legend_rects(entries, metrics, width);
  return rects.empty() ? 0 : rects.back().bottom() + row_gap;
}

double legend_minimum_width(const std::vector<LegendEntry>& entries, const QFontMetricsF& metrics) {
  double widest = 0;
  for (const LegendEntry& entry : entries) widest = std::max(widest, entry_width(entry, metrics));
  return widest + 2 * margin;
}

void paint_legend(QPainter& painter, const std::vector<LegendEntry>& entries, double width) {
  painter.save();
  const QFontMetricsF metrics(painter.font());
  const std::vector<QRectF> rects = legend_rects(entries, metrics, width);
  for (size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& entry = entries[i];
    const QRectF& r = rects[i];
    for (size_t c = 0; c < entry.swatch.size(); ++c) {
      const QRectF box(r.left() + swatch_size * static_cast<double>(c), r.center().y() - swatch_size / 2, swatch_size,
                       swatch_size);
      painter.fillRect(box, entry.swatch[c]);
      if (entry.hatched) painter.fillRect(box, idle_hatch());
    }
    const double text_left = r.left() + swatch_width(entry) + swatch_gap;
    painter.setPen(Qt::black);
    painter.drawText(QRectF(text_left, r.top(), r.right() - text_left, r.height()), Qt::AlignLeft | Qt::AlignVCenter,
                     entry.label);
  }
  painter.restore();
}

}  // namespace simtrain::gui
