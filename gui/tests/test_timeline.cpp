// The timeline of tiny-4gpu after a run in the window: one box per task at
// x = start and width = duration at the current scale (also after zooming),
// bubbles shaded where ranks idle, hover text, selection, critical path.
#include <algorithm>
#include <fstream>
#include <set>

#include <QGroupBox>
#include <QHeaderView>
#include <QScrollArea>
#include <QScrollBar>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QWheelEvent>

#include "compare_view.hpp"
#include "gui_test_support.hpp"
#include "sim/base/gzip_stream.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/program/trace.hpp"
#include "summary_panel.hpp"
#include "task_description.hpp"
#include "text_format.hpp"
#include "timeline_painter.hpp"

using namespace simtrain;
using namespace simtrain::gui;

class TimelineTest : public QObject, protected testing::TinyStepFixture {
  Q_OBJECT

  // Checks every task's box against its timing at the layout's current scale.
  void check_geometry() {
    const double pps = layout_->pixels_per_second(), origin = layout_->origin_seconds();
    for (const Task& t : model_->program().tasks) {
      const std::optional<Rect> r = layout_->task_rect(t.id);
      QVERIFY(r);
      const TaskTiming& timing = model_->timing(t.id);
      QVERIFY(qFuzzyCompare(1 + r->x, 1 + TimelineLayout::header_width + (timing.start - origin) * pps));
      QVERIFY(qFuzzyCompare(1 + r->width, 1 + (timing.end - timing.start) * pps));
      const TimelineRow& row = layout_->rows()[*layout_->row_of_rank(t.rank)];
      QVERIFY(r->y >= row.y && r->y + r->height <= row.y + row.height);
    }
  }

  QColor pixel_at(const QImage& image, double seconds, int rank) {
    const TimelineRow& row = layout_->rows()[*layout_->row_of_rank(rank)];
    const double y = ruler_height + row.y - timeline_->scroll_y() + 2;  // clear of labels
    return image.pixelColor(static_cast<int>(layout_->x_of(seconds)), static_cast<int>(y));
  }

private slots:
  void initTestCase() {
    QVERIFY(open_tiny_step());
  }

  void holdsOneItemPerTask() {
    std::multiset<int> drawn;
    for (int rank = 0; rank < model_->program().world_size; ++rank)
      for (int lane = 0; lane < static_cast<int>(model_->lanes().size()); ++lane)
        for (int id : model_->lane_tasks(rank, lane)) {
          QCOMPARE(model_->program().tasks[id].rank, rank);
          drawn.insert(id);
        }
    QCOMPARE(drawn.size(), model_->program().tasks.size());
    QCOMPARE(std::set<int>(drawn.begin(), drawn.end()).size(), model_->program().tasks.size());
  }

  // tiny-4gpu's four rows are short for the pane: the timeline takes the
  // pane's height and its lanes grow until the rows fill it (or reach 4x).
  void fewRowsFillThePane() {
    QVERIFY(timeline_->height() > window_.timelines().height() * 3 / 4);
    const double available = timeline_->viewport()->height() - ruler_height;
    QVERIFY(layout_->lane_scale() > 1);
    QVERIFY(layout_->content_height() <= available + 1e-6);
    QVERIFY(layout_->lane_scale() == TimelineLayout::max_lane_scale || layout_->content_height() > available - 1);
    QCOMPARE(layout_->lane_height(0), layout_->lane_scale() * TimelineLayout::compute_lane_height);
    QVERIFY(model_->hosts_simulated());  // a host lane under the stream lanes (test_host_row)
    QCOMPARE(layout_->natural_content_height(), 2 * TimelineLayout::stage_header_height +
                                                    4 * (TimelineLayout::compute_lane_height + TimelineLayout::row_gap +
                                                         TimelineLayout::stream_lane_height *
                                                             double(model_->lanes().size() - 1) +
                                                         TimelineLayout::host_lane_height));
  }

  void boxesSitAtStartWithDurationWidth() {
    QVERIFY(layout_->pixels_per_second() > 0);
    check_geometry();
    // The fitted view shows the whole step.
    QVERIFY(layout_->x_of(0) >= TimelineLayout::header_width);
    QVERIFY(layout_->x_of(model_->step_seconds()) <= timeline_->viewport()->width());
  }

  // Each major tick's label lies whole in the plot, beside its tick, as wide
  // as its text, apart from the others; at the right end too, at every zoom.
  void rulerLabelsFitBesideTheirTicks() {
    const QFontMetricsF metrics(timeline_->font());
    const double left = TimelineLayout::header_width, right = timeline_->viewport()->width();
    for (double factor : {1.0, 1.3, 1.7, 2.2, 3.1}) {
      TimelineLayout layout(*model_);
      layout.set_scale(layout_->origin_seconds(), layout_->pixels_per_second() * factor);
      const std::vector<RulerLabel> labels = ruler_labels(layout, left, right, metrics);
      QVERIFY(labels.size() >= 2);
      const double step = ruler_step_seconds(layout);
      for (size_t i = 0; i < labels.size(); ++i) {
        const RulerLabel& label = labels[i];
        QVERIFY(label.rect.left() >= left && label.rect.right() <= right);
        QVERIFY(label.rect.width() >= metrics.horizontalAdvance(label.text));
        if (i > 0) QVERIFY(label.rect.left() > labels[i - 1].rect.right());
      }
      // The last tick in view is labelled, wherever it falls.
      const double last_tick = std::floor(layout.seconds_at(right) / step + 1e-9) * step;
      QCOMPARE(labels.back().text, QString::fromStdString(format_duration(last_tick)));
    }
  }

  // The stage table's columns, "host-bound" last, are whole in the Summary pane:
  // no horizontal scrolling, each header as wide as its text.
  void theStageTableShowsEveryColumnWhole() {
    QApplication::processEvents();  // the header lays its sections out when it gets to it
    const QTableWidget* stages = &window_.summary().stage_table();
    QCOMPARE(stages->columnCount(), 10);
    QCOMPARE(stages->horizontalHeaderItem(8)->text(), QString("bubble"));
    QCOMPARE(stages->horizontalHeaderItem(9)->text(), QString("host-bound"));
    QCOMPARE(stages->horizontalScrollBar()->maximum(), 0);
    const QHeaderView* header = stages->horizontalHeader();
    for (int column = 0; column < stages->columnCount(); ++column) {
      QVERIFY(header->sectionSize(column) >= header->fontMetrics().horizontalAdvance(stages->horizontalHeaderItem(column)->text()));
      QVERIFY(header->sectionViewportPosition(column) + header->sectionSize(column) <= header->viewport()->width());
    }
    // And the table itself is whole in the pane's view.
    const auto* area = qobject_cast<QScrollArea*>(window_.summary().parentWidget()->parentWidget());
    QVERIFY(area);
    QVERIFY(stages->mapTo(area->viewport(), QPoint(stages->width(), 0)).x() <= area->viewport()->width());
    QVERIFY(area->mapTo(&window_, QPoint(area->width(), 0)).x() <= window_.width());  // and the pane in the window
  }

  void wheelZoomsAroundTheCursorAndKeepsGeometry() {
    const double before = layout_->pixels_per_second();
    const QPointF at(TimelineLayout::header_width + 300, 60);
    const double seconds_at_cursor = layout_->seconds_at(at.x());
    QWheelEvent wheel(at, timeline_->viewport()->mapToGlobal(at), QPoint(), QPoint(0, 480), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(timeline_->viewport(), &wheel);
    QVERIFY(qFuzzyCompare(layout_->pixels_per_second(), 2 * before));
    QVERIFY(std::abs(layout_->seconds_at(at.x()) - seconds_at_cursor) < 1e-12);
    check_geometry();
    window_.timelines().fit_all();
  }

  void dragPans() {
    const double origin = layout_->origin_seconds();
    QWidget* viewport = timeline_->viewport();
    const QPoint from(TimelineLayout::header_width + 400, 60), to = from + QPoint(-100, 0);
    QTest::mousePress(viewport, Qt::LeftButton, {}, from);
    QMouseEvent move(QEvent::MouseMove, to, viewport->mapToGlobal(to), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &move);
    QTest::mouseRelease(viewport, Qt::LeftButton, {}, to);
    QVERIFY(qFuzzyCompare(layout_->origin_seconds(), origin + 100 / layout_->pixels_per_second()));
    window_.timelines().fit_all();
  }

  void bubblesAreShadedWhereRanksIdle() {
    double idle_seconds = 0;
    for (int rank = 0; rank < model_->program().world_size; ++rank) {
      double busy_until = 0;
      for (const Span& s : model_->idle_spans(rank)) {
        QVERIFY(s.end_seconds > s.start_seconds);
        for (int id : model_->program().rank_tasks(rank))  // no task runs in a bubble
          QVERIFY(model_->timing(id).end <= s.start_seconds || model_->timing(id).start >= s.end_seconds);
        busy_until = s.end_seconds;
        if (rank == 0) idle_seconds += s.end_seconds - s.start_seconds;
      }
      QVERIFY(busy_until <= model_->step_seconds());
    }
    QVERIFY(qFuzzyCompare(model_->idle_fraction(0), idle_seconds / model_->step_seconds()));

    // Stage 1 (ranks 2 and 3) waits for the first forward: shaded, while stage 0 computes.
    const std::vector<Span>& waiting = model_->idle_spans(2);
    QVERIFY(!waiting.empty());
    QCOMPARE(waiting.front().start_seconds, 0.0);
    const RankTaskIds rank0 = model_->program().rank_tasks(0);
    const auto first_forward = std::find_if(rank0.begin(), rank0.end(), [&](int id) {
      return model_->program().tasks[id].kind == TaskKind::F;
    });
    QVERIFY(first_forward != rank0.end());
    const double t = (model_->timing(*first_forward).start + model_->timing(*first_forward).end) / 2;
    QVERIFY(t < waiting.front().end_seconds);
    const QImage image = timeline_->viewport()->grab().toImage();
    const QColor shaded = pixel_at(image, t, 2);
    QVERIFY2(shaded == idle_color() || shaded == QColor(196, 196, 196), qPrintable(shaded.name()));
    QCOMPARE(pixel_at(image, t, 0), box_color(BoxKind::forward));
  }

  void hoverTextNamesTaskTimeAndSource() {
    const int id = model_->lane_tasks(0, 0).front();
    const std::string text = describe_task(model_->step(), id);
    QVERIFY(text.find(task_name(model_->program(), model_->program().tasks[id])) == 0);
    for (const char* part : {"forward (F)", "start ", "duration ", "ops (", "time from: roofline"})
      QVERIFY2(text.find(part) != std::string::npos, text.c_str());
  }

  void clickSelectsATaskAndItsPredecessors() {
    // A compute task from the middle of the lane: paired pipeline transfers
    // share the compute stream and overlap each other, a few pixels wide.
    const std::vector<int>& lane = model_->lane_tasks(2, 0);
    auto middle = std::find_if(lane.begin() + static_cast<std::ptrdiff_t>(lane.size() / 2), lane.end(),
                               [&](int task) { return is_compute(model_->program().tasks[task].kind); });
    QVERIFY(middle != lane.end());
    const int id = *middle;
    const Rect r = *layout_->task_rect(id);
    const QPoint center(static_cast<int>(r.x + r.width / 2),
                        static_cast<int>(ruler_height + r.y + r.height / 2 - timeline_->scroll_y()));
    QTest::mouseClick(timeline_->viewport(), Qt::LeftButton, {}, center);
    QCOMPARE(timeline_->highlight().selected, id);
    QCOMPARE(timeline_->highlight().predecessors, model_->predecessors(id));
    QVERIFY(!timeline_->highlight().predecessors.empty());
    QTest::keyClick(timeline_, Qt::Key_Escape);
    QCOMPARE(timeline_->highlight().selected, -1);
  }

  void criticalPathRunsBackFromTheLastTask() {
    const std::vector<int> path = model_->critical_path();
    QVERIFY(path.size() > 2);
    QCOMPARE(model_->timing(path.back()).end, model_->step_seconds());
    for (size_t i = 1; i < path.size(); ++i) {
      const std::vector<int> before = model_->predecessors(path[i]);
      QVERIFY(std::find(before.begin(), before.end(), path[i - 1]) != before.end());
    }
    window_.timelines().show_critical_path(true);
    QCOMPARE(timeline_->highlight().critical_path, path);
  }

  // A trace of the same step (as `simtrain simulate --trace` writes it) opened as B: same tasks, same times.
  void aTraceOpensAsBOnTheSameScale() {
    QTemporaryDir dir;
    QVERIFY(testing::open_trace_as_b(window_, *model_, dir.filePath("tiny.trace.json")));
    QVERIFY(window_.timelines().comparing());
    const TimelineModel& traced = *window_.step(1);
    QCOMPARE(traced.program().tasks.size(), model_->program().tasks.size());
    QVERIFY(std::abs(traced.step_seconds() - model_->step_seconds()) < 1e-9);
    const TimelineLayout& b = *window_.timelines().timeline(1).timeline_layout();
    QCOMPARE(b.pixels_per_second(), layout_->pixels_per_second());
    QCOMPARE(b.origin_seconds(), layout_->origin_seconds());
    for (const Task& t : model_->program().tasks)
      if (b.task_rect(t.id)) QVERIFY(std::abs(b.task_rect(t.id)->x - layout_->task_rect(t.id)->x) < 1e-3);

    // The summary compares what a trace gives; the rest is absent.
    const QTableWidget& figures = window_.summary().figures();
    QCOMPARE(figures.columnCount(), 4);
    QCOMPARE(figures.item(0, 3)->text(), QString("same"));  // step time, to the nanosecond
    QCOMPARE(figures.item(2, 2)->text(), QString::fromUtf8("—"));  // TFLOP/s per GPU
    QVERIFY(describe_task(traced.step(), 0).find("time from: trace tiny.trace.json") != std::string::npos);
  }

  // Opened as A, a trace shows what it says of itself (file, maker, scenario
  // and --set, Program hash, ranks) in place of the form, with nothing to
  // run; Edit the scenario brings the form back as it was.
  void aTraceOpenedAsAShowsItsOwnAccountInPlaceOfTheForm() {
    QTemporaryDir dir;
    const QString path = dir.filePath("tiny.trace.json");
    {
      std::ofstream out(path.toStdString());
      write_chrome_trace(out, model_->program(), model_->step().timeline, {"tiny-4gpu", {"--set", "zero_stage=1"}});
    }
    MainWindow window;
    window.show();
    ScenarioPanel& panel = window.scenario_panel();
    panel.load("tiny-4gpu");
    window.open(path, 0);
    QVERIFY(QTest::qWaitFor([&] { return !window.busy(); }, 120'000));
    QVERIFY(window.step(0));
    QVERIFY(panel.showing_trace());
    QVERIFY(!panel.scenario());
    QVERIFY(!panel.field("/model/hidden_size")->isVisible());
    QStringList shown;
    for (const QLabel* label : panel.trace_box()->findChildren<QLabel*>()) shown << label->text();
    const QString text = shown.join("\n");
    for (const QString& expected : {QString("tiny-4gpu"), QString("--set zero_stage=1"), QString("simulation"),
                                    QString::fromStdString(program_hash(model_->program())), QString("4 (2 pipeline stages)")})
      QVERIFY2(text.contains(expected), qPrintable(expected + " not in " + text));
    for (QPushButton* button : panel.trace_box()->findChildren<QPushButton*>())
      if (button->text() == "Edit the scenario") button->click();
    QVERIFY(!panel.showing_trace());
    QVERIFY(panel.field("/model/hidden_size")->isVisible());
    QVERIFY(panel.scenario());
    QCOMPARE(panel.scenario()->name, std::string("tiny-4gpu"));
  }

  void aGzippedTraceOpensToo() {
    QTemporaryDir dir;
    const QString path = dir.filePath("tiny.trace.json.gz");
    {
      std::ofstream out(path.toStdString(), std::ios::binary);
      gzip_compressed([&](std::ostream& o) { write_chrome_trace(o, model_->program(), model_->step().timeline); })(out);
    }
    window_.open(path, 1);
    QVERIFY(QTest::qWaitFor([&] { return !window_.busy(); }, 120'000));
    QVERIFY(window_.step(1));
    QCOMPARE(window_.step(1)->program().tasks.size(), model_->program().tasks.size());
  }

  // With a kernel profile, the hover text counts the sources of the profiled cost model the step was timed
  // with: a GEMM of the profile's one shape is measured, other GEMMs are scaled from it, the rest roofline.
  void hoverTextNamesTheKernelProfileOfAProfiledScenario() {
    QTemporaryDir dir;
    const std::string profile = dir.filePath("h100.json").toStdString();
    const std::vector<int64_t> qkv_shape = {1024, 1536, 1024};  // tiny-4gpu's qkv GEMM at tp 2
    std::ofstream(profile) << nlohmann::json{
        {"format", "simtrain-kernel-profile"},
        {"version", 1},
        {"device", {{"name", "NVIDIA H100 80GB HBM3"}, {"sm_count", 132}}},
        {"measured_at", "hand-written for the tests"},
        {"entries", {{{"op", "qkv"}, {"op_class", "gemm"}, {"shape", qkv_shape}, {"dtype", "bf16"},
                      {"flops", 3221225472.0}, {"bytes", 8388608}, {"median_seconds", 1e-5}}}}};
    nlohmann::json document = read_json_file(SIMTRAIN_SOURCE_DIR "/scenarios/tiny-4gpu.json");
    document["cluster"]["kernel_profile"] = profile;
    const StepResult step = simulate_step(parse_scenario(document, "test.json", "."), {});

    const TaskTable& tasks = step.program.tasks;
    const Task forward =
        *std::find_if(tasks.begin(), tasks.end(), [](const Task& t) { return t.kind == TaskKind::F; });
    int measured = 0, scaled = 0, roofline = 0;
    for (const Op& op : step.program.works[forward.work].ops) {
      if (op.op_class != OpClass::gemm) ++roofline;
      else if (op.shape == qkv_shape) ++measured;
      else ++scaled;
    }
    QVERIFY(measured > 0 && scaled > 0 && roofline > 0);
    const std::string text = describe_task(step, forward.id);
    const std::string expected = "\ntime from: measured " + std::to_string(measured) + ", roofline " +
                                 std::to_string(roofline) + ", scaled " + std::to_string(scaled);
    QVERIFY2(text.find(expected) != std::string::npos, text.c_str());
  }

  // Expert parallelism's token dispatch and combine have a colour and a
  // summary row of their own, not DP's.
  void anExpertExchangeIsItsOwnKind() {
    Task exchange;
    exchange.kind = TaskKind::ALLTOALL;
    exchange.dim = CommDim::ep;
    QCOMPARE(box_kind(exchange), BoxKind::ep_comm);
    QCOMPARE(QString(to_label(BoxKind::ep_comm)), QString("EP comm"));
    QVERIFY(box_color(BoxKind::ep_comm) != box_color(BoxKind::dp_comm));
    const QTableWidget& figures = window_.summary().figures();
    QStringList labels;
    for (int row = 0; row < figures.rowCount(); ++row) labels << figures.item(row, 0)->text();
    QVERIFY(labels.contains("exposed EP comm") && labels.contains("exposed CP comm"));
  }
};

QTEST_MAIN(TimelineTest)
#include "test_timeline.moc"
