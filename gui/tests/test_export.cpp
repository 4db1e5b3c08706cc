// Export: the 1F1B timeline of p = 4, m = 8 as PNG shows stage 0 computing and
// stage 3 idle (shaded) at the start and at the end of the step; SVG export
// writes an SVG; an existing file is replaced only when the user says so.
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>

#include "compare_view.hpp"
#include "gui_test_support.hpp"

using namespace simtrain;
using namespace simtrain::gui;

class ExportTest : public QObject {
  Q_OBJECT

  MainWindow window_;
  QTemporaryDir dir_;

  // The exported pixel near the top of `rank`'s compute lane (clear of labels) at `seconds`.
  QColor exported_pixel(const QImage& image, int rank, double seconds) {
    const TimelineWidget& timeline = window_.timelines().timeline(0);
    const TimelineLayout& layout = *timeline.timeline_layout();
    const TimelineRow& row = layout.rows()[*layout.row_of_rank(rank)];
    const double y = CompareView::legend_height + ruler_height + row.y - timeline.scroll_y() + 2;
    return image.pixelColor(static_cast<int>(layout.x_of(seconds)), static_cast<int>(y));
  }

  static bool idle_at(const TimelineModel& model, int rank, double seconds) {
    for (const Span& s : model.idle_spans(rank))
      if (s.start_seconds <= seconds && seconds <= s.end_seconds) return true;
    return false;
  }

  static bool shaded(const QColor& color) { return color == idle_color() || color == QColor(196, 196, 196); }

private slots:
  void initTestCase() {
    window_.resize(1500, 900);
    window_.show();
    QVERIFY(testing::run_and_wait(window_, testing::pipeline_scenario(4, 8, "1f1b")));
    QCOMPARE(window_.step(0)->program().pipeline_size, 4);
    QCOMPARE(window_.step(0)->program().micro_batches, 8);
    window_.timelines().fit_all();
  }

  void pngShowsStageZeroBusyAndStageThreeIdleAtBothEnds() {
    const QString path = dir_.filePath("1f1b.png");
    QVERIFY(window_.export_timeline_to(path));
    const QImage image(path);
    QCOMPARE(image.size(), window_.timelines().export_size());

    // Stage 0's first and last boxes wide enough to hit (a third of the way in, clear of the label).
    const TimelineModel& model = *window_.step(0);
    const TimelineLayout& layout = *window_.timelines().timeline(0).timeline_layout();
    std::vector<int> wide;
    for (int id : model.lane_tasks(0, 0))
      if (layout.task_rect(id)->width >= 6) wide.push_back(id);
    QVERIFY(wide.size() > 8);
    for (int id : {wide.front(), wide.back()}) {
      const double t = model.timing(id).start + (model.timing(id).end - model.timing(id).start) / 3;
      QCOMPARE(exported_pixel(image, 0, t), box_color(box_kind(model.program().tasks[id])));
      QVERIFY(idle_at(model, 3, t));
      QVERIFY2(shaded(exported_pixel(image, 3, t)), qPrintable(exported_pixel(image, 3, t).name()));
    }
  }

  void svgExportWritesAnSvg() {
    const QString path = dir_.filePath("1f1b.svg");
    QVERIFY(window_.export_timeline_to(path));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray svg = file.readAll();
    QVERIFY(svg.contains("<svg"));
    QVERIFY(svg.contains("</svg>"));
  }

  void replacesAFileOnlyWhenTold() {
    const QString path = dir_.filePath("kept.png");
    {
      QFile file(path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write("mine");
    }
    testing::answer_next_message_box(QMessageBox::Cancel);
    QVERIFY(!window_.export_timeline_to(path));
    QFile kept(path);
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QCOMPARE(kept.readAll(), QByteArray("mine"));
    testing::answer_next_message_box(QMessageBox::Yes);
    QVERIFY(window_.export_timeline_to(path));
    QVERIFY(!QImage(path).isNull());
  }
};

QTEST_MAIN(ExportTest)
#include "test_export.moc"
