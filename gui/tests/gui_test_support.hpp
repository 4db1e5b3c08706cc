#pragma once
// What the GUI tests share: running a scenario in the window and waiting for
// it, answering the next message box, a scratch directory.
#include <QApplication>
#include <QMessageBox>
#include <QPushButton>
#include <QTest>
#include <QTimer>

#include <fstream>

#include <nlohmann/json.hpp>

#include "compare_view.hpp"
#include "main_window.hpp"
#include "scenario_panel.hpp"
#include "sim/program/trace.hpp"
#include "timeline_model.hpp"
#include "timeline_widget.hpp"

namespace simtrain::gui::testing {

// Simulates `document` as step `slot` of the window and waits for it.
inline bool run_and_wait(MainWindow& window, const nlohmann::json& document, int slot = 0) {
  window.scenario_panel().set_document(document, "test.json", ".");
  window.run(slot);
  return QTest::qWaitFor([&] { return !window.busy(); }, 120'000) && window.step(slot) != nullptr;
}

// What the timeline tests start from: tiny-4gpu opened in a window at the
// tests' size, as the command line opens it (its hosts simulated), and the
// parts of its timeline.
class TinyStepFixture {
protected:
  bool open_tiny_step() {
    window_.resize(1400, 900);
    window_.show();
    window_.open("tiny-4gpu");
    if (!QTest::qWaitFor([&] { return !window_.busy(); }, 120'000) || !window_.step(0)) return false;
    timeline_ = &window_.timelines().timeline(0);
    model_ = timeline_->model();
    layout_ = timeline_->timeline_layout();
    return model_->program().world_size == 4;
  }

  MainWindow window_;
  TimelineWidget* timeline_ = nullptr;
  const TimelineModel* model_ = nullptr;
  const TimelineLayout* layout_ = nullptr;
};

// Writes `step`'s Chrome trace (as `simtrain simulate --trace` does) to
// `path` and opens it as step B, waiting for it.
inline bool open_trace_as_b(MainWindow& window, const TimelineModel& step, const QString& path) {
  {
    std::ofstream out(path.toStdString());
    write_chrome_trace(out, step.program(), step.step().timeline);
  }
  window.open(path, 1);
  return QTest::qWaitFor([&] { return !window.busy(); }, 120'000) && window.step(1) != nullptr;
}

// A GPT of 16 layers on 1 x pp x 1 GPUs with m micro-batches. Untied embeddings:
// no all-reduce between the first and last stage, so idle time is all bubble.
inline nlohmann::json pipeline_scenario(int pp, int micro_batches, const std::string& schedule,
                                        int layers_per_virtual_stage = 0) {
  nlohmann::json parallelism = {{"pipeline_model_parallel_size", pp}, {"schedule", schedule}};
  if (layers_per_virtual_stage) parallelism["num_layers_per_virtual_pipeline_stage"] = layers_per_virtual_stage;
  return {{"name", "gpt-" + schedule},
          {"model",
           {{"hidden_size", 2048},
            {"num_hidden_layers", 16},
            {"num_attention_heads", 16},
            {"vocab_size", 32000},
            {"max_position_embeddings", 2048},
            {"tie_word_embeddings", false}}},
          {"training", {{"seq_length", 2048}, {"micro_batch_size", 1}, {"global_batch_size", micro_batches}}},
          {"parallelism", parallelism},
          {"cluster", {{"gpu", "H100-SXM"}, {"num_gpus", pp}, {"topology", "dgx-h100-superpod"}}}};
}

// Clicks `button` of the next message box that opens (from a nested event loop).
inline void answer_next_message_box(QMessageBox::StandardButton button) {
  auto* timer = new QTimer;
  QObject::connect(timer, &QTimer::timeout, [timer, button] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box) return;
    timer->stop();
    timer->deleteLater();
    box->button(button)->click();
  });
  timer->start(10);
}

}  // namespace simtrain::gui::testing
