// The Search view: a search's results (as `simtrain search --json` writes
// them) read into points with their labels and Pareto front; a click on a
// point writes its configuration into the form and runs it as A; files
// that are not a search's results are refused naming the field.
#include <fstream>

#include <QTemporaryDir>
#include <QTest>

#include "compare_view.hpp"
#include "gui_test_support.hpp"
#include "pareto_view.hpp"
#include "sim/base/input_error.hpp"

using namespace simtrain;
using namespace simtrain::gui;

namespace {

nlohmann::json row(int rank, nlohmann::json parallelism, double step_seconds, double cost, bool own) {
  return {{"rank", rank},
          {"num_gpus", 4},
          {"gpu", "H100-SXM"},
          {"parallelism", std::move(parallelism)},
          {"training",
           {{"micro_batch_size", 1}, {"global_batch_size", 8}, {"seq_length", 1024}, {"dtype", "bf16"},
            {"recompute_granularity", "none"}}},
          {"figures", {{"step_seconds", step_seconds}, {"error", ""}}},
          {"cost", cost},
          {"scenario_own", own}};
}

// tiny-4gpu's search, cut to three rows: the best (on the front), the
// scenario's own, and one that did not run (step 0).
nlohmann::json tiny_search() {
  return {{"scenario", {{"name", "tiny-4gpu"}}},
          {"cost_unit", "USD"},
          {"pareto_front_ranks", {1}},
          {"rows",
           {row(1, {{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 1}, {"zero_stage", 1},
                    {"sequence_parallel", true}},
                0.004, 2.5, false),
            row(2, {{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 2}, {"schedule", "1f1b"},
                    {"zero_stage", 0}, {"sequence_parallel", false}},
                0.0097, 3.0, true),
            row(3, {{"tensor_model_parallel_size", 4}, {"pipeline_model_parallel_size", 1}}, 0, 0, false)}}};
}

}  // namespace

class SearchViewTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  QString written(const std::string& name, const nlohmann::json& document) {
    const QString path = dir_.filePath(QString::fromStdString(name));
    std::ofstream(path.toStdString()) << document.dump();
    return path;
  }

private slots:
  void readsThePointsThatRanWithTheirLabelsAndFront() {
    const SearchResults results = read_search_results(written("search.json", tiny_search()).toStdString());
    QCOMPARE(results.scenario_name, std::string("tiny-4gpu"));
    QCOMPARE(results.points.size(), size_t(2));
    QCOMPARE(results.points[0].label, std::string("4 x H100-SXM, TP2 PP1 DP2, mb 1, ZeRO 1, SP"));
    QCOMPARE(results.points[1].label, std::string("4 x H100-SXM, TP2 PP2 DP1, mb 1, 1f1b, ZeRO 0"));
    QVERIFY(results.points[0].on_pareto_front && !results.points[1].on_pareto_front);
    QVERIFY(!results.points[0].scenario_own && results.points[1].scenario_own);

    nlohmann::json document = {{"parallelism", {{"data_parallel_size", 4}, {"tensor_model_parallel_size", 1}}}};
    document = with_point(document, results.points[0]);
    QVERIFY(document["parallelism"]["tensor_model_parallel_size"] == 2);
    QVERIFY(!document["parallelism"].contains("data_parallel_size"));  // num_gpus gives it, as in the search
    QVERIFY(document["cluster"]["num_gpus"] == 4);
    QVERIFY(document["training"]["micro_batch_size"] == 1);
  }

  void refusesWhatIsNotASearchNamingTheField() {
    const auto error = [&](const nlohmann::json& document) {
      try {
        read_search_results(written("bad.json", document).toStdString());
      } catch (const InputError& e) {
        return std::string(e.what());
      }
      return std::string("accepted");
    };
    const std::string path = dir_.filePath("bad.json").toStdString();
    QCOMPARE(error({{"traceEvents", nlohmann::json::array()}}),
             path + ": rows: not a search's results: expected the JSON `simtrain search --json` writes");
    nlohmann::json no_cost = tiny_search();
    no_cost["rows"][0].erase("cost");
    QVERIFY(error(no_cost).rfind(path + ": rows[0]: not a search's row: ", 0) == 0);
  }

  // A search opened in a new window: the plot has the middle to itself (no
  // empty timeline pane beside it); once a point ran, the timelines take
  // the larger part above it and the plot keeps a useful size.
  void thePlotTakesTheMiddle() {
    MainWindow window;
    window.resize(1600, 950);
    window.show();
    ParetoView& view = window.pareto_view();
    QVERIFY(view.minimumSizeHint().width() >= 400 && view.minimumSizeHint().height() >= 300);
    window.open_search_results(written("search.json", tiny_search()));
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(view.isVisible());
    QVERIFY(window.timelines().isHidden());
    QVERIFY2(view.width() >= 700 && view.height() >= 700, qPrintable(QString("%1 x %2").arg(view.width()).arg(view.height())));
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.position_of(0).toPoint());
    QVERIFY(QTest::qWaitFor([&] { return !window.busy(); }, 120'000));
    QVERIFY(window.timelines().isVisible());
    QVERIFY(window.timelines().height() > view.height());
    QVERIFY(view.width() >= 700 && view.height() >= view.minimumSizeHint().height());
  }

  // The caption, the ticks' labels and the axis title have the room their
  // text needs, inside the view; both axes have several 1-2-5 ticks.
  void everyTextHasRoomAndTheAxesSeveralTicks() {
    ParetoView view;
    view.set_results(read_search_results(written("search.json", tiny_search()).toStdString()));
    const QFontMetricsF metrics(view.font());
    for (const QSize size : {view.minimumSizeHint(), QSize(640, 420), QSize(1100, 780)}) {
      view.resize(size);
      const ParetoView::Layout layout = view.layout();
      const QRectF inside(QPointF(0, 0), QSizeF(size));
      QVERIFY(inside.contains(layout.caption_rect));
      const QRectF caption = metrics.boundingRect(layout.caption_rect, Qt::TextWordWrap, layout.caption);
      QVERIFY2(caption.width() <= layout.caption_rect.width() + 0.5 && caption.height() <= layout.caption_rect.height() + 0.5,
               qPrintable(QString("%1 px wide").arg(size.width())));
      QVERIFY(layout.caption.endsWith("red ring: the scenario's own"));
      QVERIFY(inside.contains(layout.plot) && layout.plot.top() >= layout.caption_rect.bottom());
      QVERIFY(layout.x_ticks.size() >= 3 && layout.y_ticks.size() >= 3);
      for (const auto* ticks : {&layout.x_ticks, &layout.y_ticks})
        for (size_t i = 0; i < ticks->size(); ++i) {
          const ParetoView::Tick& tick = (*ticks)[i];
          QVERIFY2(inside.contains(tick.label_rect), qPrintable(tick.label));
          QVERIFY(tick.label_rect.width() >= metrics.horizontalAdvance(tick.label) - 0.01);
          if (i > 0) QVERIFY(!tick.label_rect.intersects((*ticks)[i - 1].label_rect));
        }
      QVERIFY(inside.contains(layout.x_title_rect));
    }
    // tiny_search's step times 4.0 to 9.7 ms and costs 2.5 to 3.0 USD, at the minimum size.
    view.resize(view.minimumSizeHint());
    const ParetoView::Layout layout = view.layout();
    QStringList x, y;
    for (const ParetoView::Tick& t : layout.x_ticks) x << t.label;
    for (const ParetoView::Tick& t : layout.y_ticks) y << t.label;
    QCOMPARE(x.join(" | "), QString("4 ms | 6 ms | 8 ms"));
    QCOMPARE(y.join(" | "), QString("2.6 | 2.8 | 3.0"));
  }

  // The front point, clicked: the form takes its TP 2 x PP 1, ZeRO 1, SP and runs it as A.
  void clickingAPointRunsItsConfiguration() {
    MainWindow window;
    window.resize(1500, 900);
    window.show();
    window.open_search_results(written("search.json", tiny_search()));
    QCOMPARE(window.scenario_panel().document().value("name", std::string()), std::string("tiny-4gpu"));
    ParetoView& view = window.pareto_view();
    QVERIFY(view.isVisible());
    QCOMPARE(view.results().points.size(), size_t(2));
    QCOMPARE(view.point_at(view.position_of(1)), std::optional<int>(1));
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.position_of(0).toPoint());
    QVERIFY(QTest::qWaitFor([&] { return !window.busy(); }, 120'000));
    QVERIFY(window.step(0));
    const Scenario& ran = *window.step(0)->step().scenario;
    QCOMPARE(ran.parallel.tensor, 2);
    QCOMPARE(ran.parallel.pipeline, 1);
    QCOMPARE(ran.parallel.data, 2);
    QCOMPARE(ran.parallel.zero_stage, 1);
    QVERIFY(ran.parallel.sequence_parallel);
  }
};

QTEST_MAIN(SearchViewTest)
#include "test_search_view.moc"
