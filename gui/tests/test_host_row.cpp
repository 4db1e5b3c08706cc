// The host row: where a step's hosts were simulated, each rank's row has a
// host lane under its stream lanes, a slice per task its host launched, from
// the launch to the next (the Timeline's launches, as the trace writes them);
// a trace written from the step opens with the same host rows; a step whose
// hosts were not simulated (--free-launches) has none.
#include <algorithm>
#include <cmath>
#include <fstream>

#include <QHeaderView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "compare_view.hpp"
#include "gui_test_support.hpp"
#include "sim/program/trace.hpp"
#include "summary_panel.hpp"
#include "task_description.hpp"
#include "text_format.hpp"
#include "timeline_painter.hpp"

using namespace simtrain;
using namespace simtrain::gui;

class HostRowTest : public QObject, protected testing::TinyStepFixture {
  Q_OBJECT

  // The widest host slice of `rank`.
  size_t widest_slice(int rank) const {
    const std::vector<HostSlice>& slices = model_->host_slices(rank);
    size_t widest = 0;
    for (size_t i = 1; i < slices.size(); ++i)
      if (slices[i].end_seconds - slices[i].start_seconds >
          slices[widest].end_seconds - slices[widest].start_seconds)
        widest = i;
    return widest;
  }

  QPoint view_center(const Rect& r) const {
    return {static_cast<int>(r.x + r.width / 2), static_cast<int>(ruler_height + r.y + r.height / 2 - timeline_->scroll_y())};
  }

private slots:
  void initTestCase() {
    QVERIFY(open_tiny_step());
  }

  // Each rank's row: its stream lanes, then the host lane, within the row.
  void aRankRowHasAHostLaneWhereItsHostWasSimulated() {
    QVERIFY(model_->hosts_simulated());
    const int streams = static_cast<int>(model_->lanes().size());
    QCOMPARE(layout_->lane_count(), streams + 1);
    QVERIFY(layout_->host_lane() == std::optional<int>(streams));
    const int host = *layout_->host_lane();
    QCOMPARE(layout_->lane_height(host), layout_->lane_scale() * TimelineLayout::host_lane_height);
    QCOMPARE(layout_->lane_offset(host), layout_->lane_offset(streams - 1) + layout_->lane_height(streams - 1));
    for (int rank = 0; rank < model_->program().world_size; ++rank) {
      QVERIFY(!model_->host_slices(rank).empty());
      const TimelineRow& row = layout_->rows()[*layout_->row_of_rank(rank)];
      const Rect r = *layout_->host_slice_rect(rank, 0);
      QCOMPARE(r.y, row.y + layout_->lane_offset(host));
      QVERIFY(r.y + r.height <= row.y + row.height - TimelineLayout::row_gap + 1e-9);
      for (int id : model_->program().rank_tasks(rank))  // below every stream's boxes
        QVERIFY(layout_->task_rect(id)->y + layout_->task_rect(id)->height <= r.y + 1e-9);
    }
  }

  void aStepWhoseHostsWereNotSimulatedHasNoHostLane() {
    ReplayOptions options;
    options.free_launches = true;
    const auto step = std::make_shared<StepResult>(simulate_step(load_scenario("tiny-4gpu"), options));
    QVERIFY(step->timeline.host_of_rank.empty());
    const TimelineModel model(step);
    const TimelineLayout layout(model);
    QVERIFY(!model.hosts_simulated());
    QCOMPARE(layout.lane_count(), static_cast<int>(model.lanes().size()));
    QVERIFY(!layout.host_lane());
    QCOMPARE(layout.natural_content_height(),
             2 * TimelineLayout::stage_header_height +
                 4 * (TimelineLayout::compute_lane_height + TimelineLayout::row_gap +
                      TimelineLayout::stream_lane_height * double(model.lanes().size() - 1)));
    for (const TimelineRow& row : layout.rows())
      QVERIFY(!layout.host_slice_at(TimelineLayout::header_width + 10, row.y + row.height - TimelineLayout::row_gap - 1));
  }

  // A slice per task the host launched (a RECV posted with its SEND has
  // none), from its launch to the next one, the last to when the host was
  // done: Timeline::host_launch_seconds of the rank's host; each drawn at
  // x = start, as wide as it lasts.
  void theHostRowsSlicesAreTheTimelinesLaunches() {
    const Timeline& timeline = model_->step().timeline;
    const double pps = layout_->pixels_per_second();
    for (int rank = 0; rank < model_->program().world_size; ++rank) {
      const std::vector<double>& launches = timeline.host_launch_seconds[timeline.host_of_rank[rank]];
      const RankTaskIds ids = model_->program().rank_tasks(rank);
      QCOMPARE(launches.size(), ids.size() + 1);
      const std::vector<HostSlice>& slices = model_->host_slices(rank);
      size_t slice = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (launches[i] < 0) {
          QVERIFY(model_->program().tasks[ids[i]].kind == TaskKind::RECV);
          continue;
        }
        QVERIFY(slice < slices.size());
        QCOMPARE(slices[slice].task, ids[i]);
        QCOMPARE(slices[slice].start_seconds, launches[i]);
        const Rect r = *layout_->host_slice_rect(rank, slice);
        QVERIFY(qFuzzyCompare(1 + r.x, 1 + layout_->x_of(launches[i])));
        QVERIFY(qFuzzyCompare(1 + r.width, 1 + (slices[slice].end_seconds - launches[i]) * pps));
        if (slice > 0) QCOMPARE(slices[slice - 1].end_seconds, launches[i]);  // until the next launch
        ++slice;
      }
      QCOMPARE(slices.size(), slice);
      QCOMPARE(slices.back().end_seconds, launches.back());  // when the host was done
    }
  }

  // Hovering a host slice names the task it launched; clicking it selects that task.
  void aHostSliceNamesAndSelectsTheTaskItLaunched() {
    const size_t index = widest_slice(2);
    const HostSlice& slice = model_->host_slices(2)[index];
    const Rect r = *layout_->host_slice_rect(2, index);
    const QPoint center = view_center(r);
    QVERIFY(layout_->host_slice_at(center.x(), center.y() - ruler_height + timeline_->scroll_y()) == &slice);
    QCOMPARE(layout_->task_at(center.x(), center.y() - ruler_height + timeline_->scroll_y()), -1);
    const Task& task = model_->program().tasks[slice.task];
    const std::string text = describe_host_launch(model_->step(), slice);
    QVERIFY2(text.find("launch " + task_name(model_->program(), task) + "\nthe host of rank 2 (tp 0, pp 1, dp 0)") == 0,
             text.c_str());
    for (const std::string& part : {"start " + format_duration(slice.start_seconds),
                                    "until its next launch " + format_duration(slice.end_seconds - slice.start_seconds),
                                    "the task ran from " + format_duration(model_->timing(slice.task).start)})
      QVERIFY2(text.find(part) != std::string::npos, text.c_str());
    QVERIFY2(text.find("simulated as") == std::string::npos, text.c_str());
    // Rank 3, rank 2's TP peer, shares its host in the replay, and says so.
    QCOMPARE(model_->step().timeline.host_of_rank[3], 2);
    const std::string peer = describe_host_launch(model_->step(), model_->host_slices(3)[index]);
    QVERIFY2(peer.find("the host of rank 3 (tp 1, pp 1, dp 0)") != std::string::npos, peer.c_str());
    QVERIFY2(peer.find("\nsimulated as rank 2's host") != std::string::npos, peer.c_str());
    QTest::mouseClick(timeline_->viewport(), Qt::LeftButton, {}, center);
    QCOMPARE(timeline_->highlight().selected, slice.task);
    QTest::keyClick(timeline_, Qt::Key_Escape);
  }

  // Drawn in its own colour, which the legend names; the GPU's idle
  // shading stays over the stream lanes.
  void theHostLaneIsDrawnInItsLegendColour() {
    QVERIFY(timeline_->isVisible());
    const QImage image = timeline_->viewport()->grab().toImage();
    const size_t index = widest_slice(0);
    const QPoint center = view_center(*layout_->host_slice_rect(0, index));
    QCOMPARE(image.pixelColor(center), host_color());
    const std::vector<LegendEntry>& legend = window_.timelines().legend();
    QVERIFY(std::any_of(legend.begin(), legend.end(), [](const LegendEntry& e) {
      return e.label == "host launching kernels" && e.swatch == std::vector<QColor>{host_color()};
    }));
    // After its host's last launch, rank 0's host lane is blank, though its GPU still works or idles.
    const std::vector<HostSlice>& slices = model_->host_slices(0);
    const double after = (slices.back().end_seconds + model_->step_seconds()) / 2;
    QVERIFY(slices.back().end_seconds < model_->step_seconds());
    const QColor blank = image.pixelColor(static_cast<int>(layout_->x_of(after)), center.y());
    QVERIFY2(blank != host_color() && blank != idle_color() && blank != idle_hatch().color(), qPrintable(blank.name()));
  }

  // The stage table has the report's host-bound column.
  void theStageTableShowsEachStagesHostBoundTime() {
    const QTableWidget& stages = window_.summary().stage_table();
    const int column = stages.columnCount() - 1;
    QCOMPARE(stages.horizontalHeaderItem(column)->text(), QString("host-bound"));
    const StepReport& report = model_->step().report;
    QVERIFY(report.host_wait_seconds);
    QCOMPARE(stages.rowCount(), static_cast<int>(report.stages.size()));
    for (int row = 0; row < stages.rowCount(); ++row)
      QCOMPARE(stages.item(row, column)->text(),
               QString::fromStdString(format_duration(report.stages[row].host_wait_seconds)));
  }

  // A trace of the step (as `simtrain simulate --trace` writes it) opens as
  // B with the same host rows; the trace carries no host-bound figure.
  void aTraceGivesTheSameHostRowsAsTheStepItWasWrittenFrom() {
    QTemporaryDir dir;
    QVERIFY(testing::open_trace_as_b(window_, *model_, dir.filePath("tiny.trace.json")));
    const TimelineModel& traced = *window_.step(1);
    const TimelineLayout& b = *window_.timelines().timeline(1).timeline_layout();
    QVERIFY(traced.hosts_simulated());
    QVERIFY(b.host_lane() == layout_->host_lane());
    for (int rank = 0; rank < model_->program().world_size; ++rank) {
      const std::vector<HostSlice>& simulated = model_->host_slices(rank);
      const std::vector<HostSlice>& read = traced.host_slices(rank);
      QCOMPARE(read.size(), simulated.size());
      for (size_t i = 0; i < read.size(); ++i) {
        QCOMPARE(read[i].task, simulated[i].task);
        QVERIFY(std::abs(read[i].start_seconds - simulated[i].start_seconds) < 1e-9);
        QVERIFY(std::abs(read[i].end_seconds - simulated[i].end_seconds) < 1e-9);
        QVERIFY(std::abs(b.host_slice_rect(rank, i)->x - layout_->host_slice_rect(rank, i)->x) < 1e-3);
      }
    }
    const QTableWidget& stages = window_.summary().stage_table();
    QCOMPARE(stages.item(stages.rowCount() - 1, stages.columnCount() - 1)->text(), QString::fromUtf8("—"));
  }
};

QTEST_MAIN(HostRowTest)
#include "test_host_row.moc"
