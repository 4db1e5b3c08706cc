// The legend: a swatch per kind of box, idle and (where shown) the hosts, and for interleaved
// timelines the darker shade of their odd model chunks; rows wrap rather
// than cut entries off, on screen and in exports.
#include <QTest>

#include "compare_view.hpp"
#include "gui_test_support.hpp"
#include "timeline_legend.hpp"
#include "timeline_painter.hpp"

using namespace simtrain;
using namespace simtrain::gui;

namespace {

QStringList labels(const std::vector<LegendEntry>& entries) {
  QStringList list;
  for (const LegendEntry& e : entries) list << e.label;
  return list;
}

const QStringList kinds = {"forward", "backward", "weight grad", "recompute", "optimizer", "TP comm",
                           "PP comm", "DP comm",  "CP comm",     "EP comm",   "idle"};

}  // namespace

class LegendTest : public QObject {
  Q_OBJECT

private slots:
  void entriesWithoutInterleaving() {
    const std::vector<LegendEntry> entries = legend_entries(1);
    QCOMPARE(labels(entries), kinds);
    QCOMPARE(entries[0].swatch, std::vector<QColor>{box_color(BoxKind::forward)});
    QVERIFY(entries.back().hatched);
  }

  void interleavedChunksGetTheirShade() {
    const std::vector<LegendEntry> two = legend_entries(2);
    QCOMPARE(labels(two), kinds + QStringList{"darker: 2nd model chunk on each GPU (interleaved)"});
    QCOMPARE(two.back().swatch, (std::vector<QColor>{box_color(BoxKind::forward), box_color(BoxKind::forward, 1)}));
    QVERIFY(box_color(BoxKind::forward, 1) != box_color(BoxKind::forward));
    QCOMPARE(legend_entries(4).back().label, QString("darker: 2nd, 4th, … model chunks on each GPU (interleaved)"));
  }

  // Timelines with host rows add the hosts' colour, after idle.
  void hostRowsGetTheirEntry() {
    const std::vector<LegendEntry> entries = legend_entries(1, true);
    QCOMPARE(labels(entries), kinds + QStringList{"host launching kernels"});
    QCOMPARE(entries.back().swatch, std::vector<QColor>{host_color()});
    QVERIFY(!entries.back().hatched);
    for (int k = 0; k < box_kind_count; ++k) QVERIFY(host_color() != box_color(static_cast<BoxKind>(k)));
    QCOMPARE(labels(legend_entries(2, true)).at(kinds.size()), QString("host launching kernels"));
  }

  // Each entry is as wide as its swatch and text, and within the width, on
  // as many rows as needed, down to the least width, which the widest entry sets.
  void rowsWrapWithinTheWidth() {
    const QFontMetricsF metrics(QApplication::font());
    const std::vector<LegendEntry> entries = legend_entries(2);
    const double least = legend_minimum_width(entries, metrics);
    QVERIFY(least > metrics.horizontalAdvance(entries.back().label) + 24);
    for (double width : {least, 700.0, 1200.0, 4000.0}) {
      const std::vector<QRectF> rects = legend_rects(entries, metrics, width);
      QCOMPARE(rects.size(), entries.size());
      for (size_t i = 0; i < rects.size(); ++i) {
        QVERIFY(rects[i].left() >= 0 && rects[i].right() <= width);
        QVERIFY(rects[i].width() >= metrics.horizontalAdvance(entries[i].label) + 12 * double(entries[i].swatch.size()));
        if (i > 0) QVERIFY(rects[i].top() > rects[i - 1].top() || rects[i].left() > rects[i - 1].right());
      }
      QVERIFY(legend_height(entries, metrics, width) >= rects.back().bottom());
    }
    QVERIFY(legend_height(entries, metrics, least) > legend_height(entries, metrics, 4000));
  }

  // In the window: 1F1B alone has no chunk entry (its hosts simulated, an
  // entry for them); comparing it with interleaved 1F1B adds it; the legend
  // bar is as tall as its rows at its width.
  void theWindowsLegendFollowsTheTimelines() {
    MainWindow window;
    window.resize(1200, 800);
    window.show();
    QVERIFY(testing::run_and_wait(window, testing::pipeline_scenario(4, 8, "1f1b")));
    CompareView& view = window.timelines();
    QCOMPARE(labels(view.legend()), kinds + QStringList{"host launching kernels"});
    QVERIFY(testing::run_and_wait(window, testing::pipeline_scenario(4, 8, "interleaved_1f1b", 2), 1));
    QCOMPARE(window.step(1)->program().virtual_stages, 2);
    QCOMPARE(view.legend().back().label, QString("darker: 2nd model chunk on each GPU (interleaved)"));
    QCOMPARE(view.legend_height_at(view.width()),
             int(std::ceil(legend_height(view.legend(), QFontMetricsF(view.font()), view.width()))));
    QVERIFY(view.legend_height_at(view.width()) > QFontMetricsF(view.font()).height() * 2);  // two rows at this width
    QVERIFY(view.minimumSizeHint().width() >= legend_minimum_width(view.legend(), QFontMetricsF(view.font())));
  }
};

QTEST_MAIN(LegendTest)
#include "test_legend.moc"
