// Export: the 1F1B timeline of p = 4, m = 8 as PNG shows stage 0 computing and
// stage 3 idle (shaded) at the start and at the end of the step; SVG export
// writes an SVG; an existing file is replaced only when the user says so.
// Zoomed out until every box is narrower than a pixel, each pixel column
// takes the colour of the kind that fills most of it.
#include <map>
#include <optional>

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
    const CompareView& view = window_.timelines();
    const double y = view.legend_height_at(view.export_size().width()) + ruler_height + row.y - timeline.scroll_y() + 2;
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

  // Stage 0's forwards and backwards take turns (backwards twice as long):
  // at 0.8 pixel for the longest box, columns hold parts of both. Every
  // column where one colour fills at least 60 % of the busy time is drawn
  // in it, also where the box starting first in it is of the other kind.
  void subPixelColumnsTakeTheColourThatFillsMostOfThem() {
    const TimelineModel& model = *window_.step(0);
    const std::vector<int>& tasks = model.lane_tasks(0, 0);
    double longest = 0;
    for (int id : tasks) longest = std::max(longest, model.timing(id).end - model.timing(id).start);
    TimelineLayout layout(model);
    layout.set_scale(0, 0.8 / longest);
    const double width = layout.x_of(model.step_seconds()) + 10;
    QImage image(QSize(int(width), int(ruler_height + layout.content_height())), QImage::Format_RGB32);
    QPainter painter(&image);
    paint_timeline(painter, image.size(), model, layout, 0, {}, {});
    painter.end();
    const int y = int(ruler_height + layout.rows()[*layout.row_of_rank(0)].y + 2);
    int checked = 0, first_of_other_kind = 0;
    for (int column = int(TimelineLayout::header_width); column + 1 < int(width); ++column) {
      const double from = layout.seconds_at(column), to = layout.seconds_at(column + 1);
      std::map<QRgb, double> seconds_of_color;
      double busy = 0;
      std::optional<QRgb> first;
      for (int id : tasks) {
        const double seconds = std::min(model.timing(id).end, to) - std::max(model.timing(id).start, from);
        if (seconds <= 0) continue;
        const QRgb color = task_color(model.program(), model.program().tasks[id]).rgb();
        if (!first && model.timing(id).start >= from) first = color;
        seconds_of_color[color] += seconds;
        busy += seconds;
      }
      const auto most = std::max_element(seconds_of_color.begin(), seconds_of_color.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
      if (busy == 0 || most->second < 0.6 * busy) continue;
      QCOMPARE(image.pixelColor(column, y), QColor(most->first));
      ++checked;
      if (first && *first != most->first) ++first_of_other_kind;
    }
    QVERIFY(checked >= 10);  // of the step's 33 boxes
    QVERIFY(first_of_other_kind > 0);  // the case alternating columns got wrong
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
