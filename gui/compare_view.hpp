#pragma once
// The centre of the window: the legend, then the timeline of step A and, when
// comparing, the timeline of step B below it on the same time scale.
#include <QWidget>

#include "time_scale.hpp"
#include "timeline_legend.hpp"
#include "timeline_widget.hpp"

class QSplitter;

namespace simtrain::gui {

class LegendBar;

class CompareView : public QWidget {
  Q_OBJECT
public:
  explicit CompareView(QWidget* parent = nullptr);

  // slot 0 is A, 1 is B; a null model for B hides it.
  void set_step(int slot, std::shared_ptr<const TimelineModel> model);
  TimelineWidget& timeline(int slot) { return *timelines_[slot]; }
  bool comparing() const;
  void fit_all();  // the longer step fills the width
  void show_critical_path(bool shown);
  void show_all_ranks(bool shown);

  // What the legend shows, and its height at `width` (above the timelines, on screen and in exports).
  const std::vector<LegendEntry>& legend() const;
  int legend_height_at(int width) const;
  // The legend and the shown timelines as they are in view, stacked (for export).
  QSize export_size() const;
  void paint_export(QPainter& painter) const;

signals:
  void task_selected(const QString& description);

protected:
  void resizeEvent(QResizeEvent* event) override;

private:
  // Short timelines get the height of their rows, the others share the rest.
  void share_height();
  int model_chunks() const;  // the most of the timelines shown
  bool hosts_shown() const;  // whether a timeline shown has host rows

  TimeScale scale_;
  QSplitter* splitter_;
  LegendBar* legend_;
  TimelineWidget* timelines_[2];
};

}  // namespace simtrain::gui
