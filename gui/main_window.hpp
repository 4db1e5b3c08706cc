#pragma once
// The simtrain-gui window: the scenario form and Run controls on the left,
// the timelines of step A (and B when comparing) in the middle, above a
// search's Pareto plot when one is open (the plot alone until a step ran),
// the summary on the right; menus to open scenarios and traces, save scenarios (asking
// before replacing a file) and export the timelines as PNG or SVG.
#include <deque>
#include <memory>

#include <QMainWindow>

#include "step_runner.hpp"

class QAction;
class QDockWidget;
class QLabel;
class QProgressBar;
class QPushButton;
class QSplitter;

namespace simtrain::gui {

class CompareView;
class ParetoView;
class ScenarioPanel;
class SummaryPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
public:
  MainWindow();

  // A trace is shown as step `slot` (0: A, 1: B); a scenario (file or built-in
  // name) is simulated as that step, and for A also loaded into the form.
  void open(const QString& path, int slot = 0);
  void run(int slot);  // simulates the scenario in the form
  void cancel();
  // Each asks before replacing an existing file; false if not written.
  bool save_scenario(const QString& path);
  bool export_timeline_to(const QString& path);
  // A search's results (`simtrain search --json`) in the Search view (the Pareto plot); the
  // scenario it searched is loaded into the form where it is not there yet.
  void open_search_results(const QString& path);
  // Writes the point's configuration into the form and runs it as A.
  void run_search_point(int index);

  // Not interactive (batch export): problems go to stderr instead of message boxes.
  void set_interactive(bool interactive) { interactive_ = interactive; }
  bool had_problems() const { return had_problems_; }

  ScenarioPanel& scenario_panel() { return *panel_; }
  ParetoView& pareto_view() { return *pareto_; }
  CompareView& timelines() { return *view_; }
  SummaryPanel& summary() { return *summary_; }
  const QProgressBar& progress_bar() const { return *progress_; }
  const QPushButton& run_button(int slot) const { return *run_buttons_[slot]; }
  std::shared_ptr<const TimelineModel> step(int slot) const { return steps_[slot]; }
  bool busy() const { return runner_.busy() || !queue_.empty(); }

signals:
  void idle();  // every queued run has ended

private:
  struct Queued {
    StepRunner::Job job;
    int slot;
  };
  void build_menus();
  QWidget* build_run_controls();
  void enqueue(StepRunner::Job job, int slot);
  void start_next();
  void on_scenario_changed();
  void on_progress(double simulated_seconds, qulonglong done, qulonglong total);
  void on_finished(int slot, std::shared_ptr<const TimelineModel> model);
  void on_ended(const QString& message);
  void stop_comparing();
  void show_summary();  // of the steps shown
  bool confirm_replace(const QString& path);
  void warn(const QString& message);
  void save_as();
  void export_as(const QString& extension);

  ScenarioPanel* panel_;
  CompareView* view_;
  SummaryPanel* summary_;
  QDockWidget* summary_dock_;
  ParetoView* pareto_;
  QSplitter* centre_;  // the timelines over the Search view
  QAction* search_action_;  // shows or hides the Search view
  StepRunner runner_;
  std::deque<Queued> queue_;
  std::shared_ptr<const TimelineModel> steps_[2];
  QPushButton* run_buttons_[2];
  QPushButton* cancel_button_;
  QProgressBar* progress_;
  QString scenario_path_;  // where Save writes without asking again
  bool interactive_ = true;
  bool had_problems_ = false;
};

}  // namespace simtrain::gui
