#pragma once
// Memory per GPU of each pipeline stage as a stacked bar (weights, gradients,
// optimizer state, activations) against the GPU's capacity.
#include <vector>

#include <QWidget>

#include "sim/step/memory_model.hpp"

namespace simtrain::gui {

class MemoryBars : public QWidget {
public:
  explicit MemoryBars(QWidget* parent = nullptr);
  void set_memory(const std::vector<MemoryBreakdown>& stages, double capacity_bytes);
  QSize sizeHint() const override;

protected:
  void paintEvent(QPaintEvent* event) override;

private:
  std::vector<MemoryBreakdown> stages_;
  double capacity_bytes_ = 0;
};

}  // namespace simtrain::gui
