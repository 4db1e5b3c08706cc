#pragma once
// The report's figures for step A (and B, with the differences, when
// comparing): step time, throughput, TFLOP/s per GPU, MFU, bubble, exposed
// communication by kind, peak memory; where the time went on each pipeline
// stage (and how long its compute stream waited for its host); memory per
// GPU as stacked bars against the GPU's capacity. A step read from a trace
// has the timing figures only.
#include <QWidget>

#include "step_result.hpp"

class QLabel;
class QTableWidget;

namespace simtrain::gui {

class MemoryBars;

class SummaryPanel : public QWidget {
  Q_OBJECT
public:
  explicit SummaryPanel(QWidget* parent = nullptr);
  void set_steps(const StepResult* a, const StepResult* b);  // b: compared with a, or null
  const QTableWidget& stage_table() const { return *stages_; }  // where the time went, per stage
  const QTableWidget& figures() const { return *figures_; }

private:
  void show_stages(const StepResult* a, const StepResult* b);

  QLabel* names_;
  QTableWidget* figures_;
  QTableWidget* stages_;
  QLabel* memory_titles_[2];
  MemoryBars* memory_[2];
  QLabel* notes_;
};

}  // namespace simtrain::gui
