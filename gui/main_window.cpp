#include "main_window.hpp"

#include <cstdio>
#include <fstream>

#include <QAction>
#include <QDockWidget>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStatusBar>
#include <QVBoxLayout>

#include "compare_view.hpp"
#include "pareto_view.hpp"
#include "scenario_panel.hpp"
#include "sim/base/atomic_file.hpp"
#include "sim/base/input_error.hpp"
#include "summary_panel.hpp"
#include "text_format.hpp"
#include "timeline_export.hpp"

namespace simtrain::gui {

namespace {

// What write_chrome_trace writes starts with its event list; a scenario has
// none. A gzip file (--trace x.json.gz) is a trace: scenarios are never compressed.
bool is_trace(const QString& path) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.starts_with("\x1f\x8b")) return true;
  const size_t first = head.find_first_not_of(" \t\r\n");
  return first != std::string::npos && (head[first] == '[' || head.find("\"traceEvents\"") != std::string::npos);
}

// Scrolls vertically only, so it is at least as wide as its widget needs
// (a table's columns): nothing is cut off at the right.
class VerticalScrollArea : public QScrollArea {
public:
  QSize minimumSizeHint() const override {
    const QSize least = QScrollArea::minimumSizeHint();
    if (!widget()) return least;
    return {std::max(least.width(), widget()->minimumSizeHint().width() + verticalScrollBar()->sizeHint().width() +
                                        2 * frameWidth()),
            least.height()};
  }

protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == widget() && event->type() == QEvent::LayoutRequest) updateGeometry();  // its needs may have changed
    return QScrollArea::eventFilter(watched, event);
  }
};

QScrollArea* scrolled(QWidget* widget) {
  auto* area = new VerticalScrollArea;
  area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  area->setWidget(widget);
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  return area;
}

const char* slot_name(int slot) { return slot == 0 ? "A" : "B"; }

}  // namespace

MainWindow::MainWindow()
    : panel_(new ScenarioPanel), view_(new CompareView), summary_(new SummaryPanel), pareto_(new ParetoView) {
  setWindowTitle("simtrain");
  // The Search view shares the middle with the timelines, and has it alone
  // until a step ran: no empty pane beside a small plot.
  centre_ = new QSplitter(Qt::Vertical);
  centre_->addWidget(view_);
  centre_->addWidget(pareto_);
  centre_->setChildrenCollapsible(false);
  pareto_->hide();  // until a search's results are opened
  setCentralWidget(centre_);

  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addWidget(scrolled(panel_), 1);
  left_layout->addWidget(build_run_controls());
  auto* scenario_dock = new QDockWidget(tr("Scenario"));
  scenario_dock->setObjectName("scenario");
  scenario_dock->setWidget(left);
  scenario_dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, scenario_dock);

  summary_dock_ = new QDockWidget(tr("Summary"));
  summary_dock_->setObjectName("summary");
  summary_dock_->setWidget(scrolled(summary_));
  summary_dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::RightDockWidgetArea, summary_dock_);
  resizeDocks({scenario_dock, summary_dock_}, {340, 450}, Qt::Horizontal);

  connect(pareto_, &ParetoView::point_chosen, this, &MainWindow::run_search_point);

  build_menus();
  connect(&runner_, &StepRunner::progress, this, &MainWindow::on_progress);
  connect(&runner_, &StepRunner::finished, this, &MainWindow::on_finished);
  connect(&runner_, &StepRunner::failed, this, [this](int slot, const QString& message) {
    warn(message);
    on_ended(tr("%1 failed: %2").arg(slot_name(slot), message));
  });
  connect(&runner_, &StepRunner::cancelled, this, [this](int slot) { on_ended(tr("%1 cancelled").arg(slot_name(slot))); });
  connect(view_, &CompareView::task_selected, this, [this](const QString& text) {
    statusBar()->showMessage(QString(text).replace('\n', "  ·  "));
  });
  connect(panel_, &ScenarioPanel::changed, this, &MainWindow::on_scenario_changed);
  on_scenario_changed();  // the form starts without a scenario
  resize(1600, 950);
}

void MainWindow::on_scenario_changed() {
  for (QPushButton* b : run_buttons_) b->setEnabled(panel_->scenario().has_value() && !runner_.busy());
  // The message that disables Run, where it is seen whatever the form's scroll position.
  if (!panel_->error().isEmpty()) statusBar()->showMessage(panel_->error());
}

QWidget* MainWindow::build_run_controls() {
  auto* box = new QWidget;
  auto* layout = new QVBoxLayout(box);
  auto* buttons = new QHBoxLayout;
  run_buttons_[0] = new QPushButton(tr("Run"));
  run_buttons_[0]->setToolTip(tr("Simulate the scenario as step A (Ctrl+R)"));
  run_buttons_[1] = new QPushButton(tr("Run as B"));
  run_buttons_[1]->setToolTip(tr("Simulate the scenario as step B, to compare it with A (Ctrl+Shift+R)"));
  cancel_button_ = new QPushButton(tr("Cancel"));
  cancel_button_->setEnabled(false);
  for (int slot = 0; slot < 2; ++slot) {
    connect(run_buttons_[slot], &QPushButton::clicked, this, [this, slot] { run(slot); });
    buttons->addWidget(run_buttons_[slot]);
  }
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel);
  buttons->addWidget(cancel_button_);
  layout->addLayout(buttons);
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat(tr("idle"));
  layout->addWidget(progress_);
  return box;
}

void MainWindow::build_menus() {
  auto add = [this](QMenu* menu, const QString& text, const QKeySequence& keys, auto slot) {
    QAction* action = menu->addAction(text);
    action->setShortcut(keys);
    connect(action, &QAction::triggered, this, slot);
    return action;
  };
  QMenu* file = menuBar()->addMenu(tr("&File"));
  add(file, tr("&Open scenario or trace…"), QKeySequence::Open, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open"), {}, tr("Scenarios and traces (*.json)"));
    if (!path.isEmpty()) open(path, 0);
  });
  add(file, tr("Open scenario or trace as &B (compare)…"), QKeySequence(), [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open as B"), {}, tr("Scenarios and traces (*.json)"));
    if (!path.isEmpty()) open(path, 1);
  });
  add(file, tr("Open search &results…"), QKeySequence(), [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open search results"), {},
                                                      tr("simtrain search --json (*.json)"));
    if (!path.isEmpty()) open_search_results(path);
  });
  file->addSeparator();
  add(file, tr("&Save scenario"), QKeySequence::Save, [this] {
    if (scenario_path_.isEmpty()) save_as();
    else save_scenario(scenario_path_);
  });
  add(file, tr("Save scenario &as…"), QKeySequence::SaveAs, [this] { save_as(); });
  file->addSeparator();
  add(file, tr("Export timeline as &PNG…"), QKeySequence(), [this] { export_as("png"); });
  add(file, tr("Export timeline as S&VG…"), QKeySequence(), [this] { export_as("svg"); });
  file->addSeparator();
  add(file, tr("&Quit"), QKeySequence::Quit, [this] { close(); });

  QMenu* run_menu = menuBar()->addMenu(tr("&Run"));
  add(run_menu, tr("&Run as A"), QKeySequence("Ctrl+R"), [this] { run(0); });
  add(run_menu, tr("Run as &B (compare)"), QKeySequence("Ctrl+Shift+R"), [this] { run(1); });
  add(run_menu, tr("&Cancel"), QKeySequence("Ctrl+."), [this] { cancel(); });
  add(run_menu, tr("&Stop comparing"), QKeySequence(), [this] { stop_comparing(); });

  QMenu* view = menuBar()->addMenu(tr("&View"));
  add(view, tr("Zoom to &fit"), QKeySequence("Ctrl+0"), [this] { view_->fit_all(); });
  QAction* path = add(view, tr("Show &critical path"), QKeySequence("Ctrl+K"),
                      [this](bool on) { view_->show_critical_path(on); });
  path->setCheckable(true);
  QAction* all_ranks = add(view, tr("Show all &ranks of every stage"), QKeySequence(),
                           [this](bool on) { view_->show_all_ranks(on); });
  all_ranks->setCheckable(true);
  search_action_ = add(view, tr("Show the &search's plot"), QKeySequence(), [this](bool on) {
    pareto_->setVisible(on);
    if (!on) view_->show();  // the middle is never left empty
  });
  search_action_->setCheckable(true);
  search_action_->setEnabled(false);  // until a search's results are opened
}

void MainWindow::open(const QString& path, int slot) {
  const std::string name = path.toStdString();
  try {
    if (QFileInfo(path).isFile() && is_trace(path)) {
      enqueue([name](const ReplayOptions&) { return read_trace_step(name); }, slot);
    } else if (slot == 0) {
      panel_->load(name);
      scenario_path_.clear();  // Save asks before replacing the file
      run(0);
    } else {
      const Scenario scenario = load_scenario(name);
      enqueue([scenario](const ReplayOptions& options) { return simulate_step(scenario, options); }, 1);
    }
  } catch (const InputError& e) {
    warn(QString::fromStdString(e.what()));
    if (!busy()) emit idle();
  }
}

void MainWindow::open_search_results(const QString& path) {
  try {
    SearchResults results = read_search_results(path.toStdString());
    if (results.points.empty()) throw InputError(path.toStdString(), "rows", "no configuration ran in this search");
    const std::string name = results.scenario_name;
    if (panel_->document().value("name", std::string()) != name) panel_->load(name);
    pareto_->set_results(std::move(results));
    pareto_->show();
    view_->setVisible(steps_[0] || steps_[1]);
    search_action_->setEnabled(true);
    search_action_->setChecked(true);
    statusBar()->showMessage(tr("Search of %1: %2 configurations; click a point to run it as A")
                                 .arg(QString::fromStdString(name))
                                 .arg(pareto_->results().points.size()));
  } catch (const InputError& e) {
    warn(QString::fromStdString(e.what()));
  }
}

void MainWindow::run_search_point(int index) {
  const SearchResults& results = pareto_->results();
  if (panel_->document().value("name", std::string()) != results.scenario_name) {
    warn(tr("The search was of scenario %1; the form holds another: open %1 first.")
             .arg(QString::fromStdString(results.scenario_name)));
    return;
  }
  panel_->edit_document(with_point(panel_->document(), results.points[index]));
  run(0);
}

void MainWindow::run(int slot) {
  if (!panel_->scenario()) {
    warn(panel_->has_document() ? tr("Fix the scenario first: %1").arg(panel_->error()) : panel_->error());
    if (!busy()) emit idle();
    return;
  }
  const Scenario scenario = *panel_->scenario();
  enqueue([scenario](const ReplayOptions& options) { return simulate_step(scenario, options); }, slot);
}

void MainWindow::cancel() {
  queue_.clear();
  runner_.cancel();
}

void MainWindow::enqueue(StepRunner::Job job, int slot) {
  queue_.push_back({std::move(job), slot});
  if (!runner_.busy()) start_next();
}

void MainWindow::start_next() {
  if (queue_.empty()) {
    emit idle();
    return;
  }
  Queued next = std::move(queue_.front());
  queue_.pop_front();
  for (QPushButton* b : run_buttons_) b->setEnabled(false);
  cancel_button_->setEnabled(true);
  progress_->setRange(0, 0);  // busy until the replay reports
  progress_->setFormat(tr("%1: building the Program…").arg(slot_name(next.slot)));
  runner_.start(std::move(next.job), next.slot);
}

void MainWindow::on_progress(double simulated_seconds, qulonglong done, qulonglong total) {
  progress_->setRange(0, 1000);
  progress_->setValue(total ? static_cast<int>(1000.0 * static_cast<double>(done) / static_cast<double>(total)) : 0);
  progress_->setFormat(tr("%1 of %2 tasks, %3 simulated")
                           .arg(done)
                           .arg(total)
                           .arg(QString::fromStdString(format_duration(simulated_seconds))));
}

void MainWindow::on_finished(int slot, std::shared_ptr<const TimelineModel> model) {
  steps_[slot] = std::move(model);
  if (view_->isHidden()) {  // beside a search's plot: the timelines above it, taking the larger part
    view_->show();
    centre_->setSizes({centre_->height() * 3 / 5, centre_->height() * 2 / 5});
  }
  show_summary();  // first: it may take width from the timelines, which then fit what is left
  view_->set_step(slot, steps_[slot]);
  const StepResult& step = steps_[slot]->step();
  if (slot == 0 && !step.scenario) panel_->show_trace(step.trace_facts);
  setWindowTitle(QString("simtrain: %1").arg(QString::fromStdString(steps_[0] ? steps_[0]->step().title : step.title)));
  on_ended(tr("%1: %2, step time %3")
               .arg(slot_name(slot), QString::fromStdString(step.title),
                    QString::fromStdString(format_duration(step.report.step_seconds))));
}

void MainWindow::on_ended(const QString& message) {
  statusBar()->showMessage(message);
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat(message);
  cancel_button_->setEnabled(false);
  for (QPushButton* b : run_buttons_) b->setEnabled(panel_->scenario().has_value());
  start_next();
}

void MainWindow::stop_comparing() {
  steps_[1].reset();
  view_->set_step(1, nullptr);
  show_summary();
}

void MainWindow::show_summary() {
  summary_->set_steps(steps_[0] ? &steps_[0]->step() : nullptr, steps_[1] ? &steps_[1]->step() : nullptr);
  // Its tables may need more width now: the dock takes it from the middle.
  const int needed = summary_dock_->widget()->minimumSizeHint().width();
  if (summary_dock_->width() >= needed) return;
  resizeDocks({summary_dock_}, {needed}, Qt::Horizontal);
  layout()->activate();  // now, not at the next event loop turn
}

void MainWindow::warn(const QString& message) {
  had_problems_ = true;
  statusBar()->showMessage(message);
  if (interactive_) QMessageBox::warning(this, tr("simtrain"), message);
  else std::fprintf(stderr, "simtrain-gui: %s\n", qPrintable(message));
}

bool MainWindow::confirm_replace(const QString& path) {
  if (!QFileInfo::exists(path)) return true;
  return QMessageBox::question(this, tr("Replace file?"),
                               tr("%1 already exists. Replace it?").arg(QFileInfo(path).fileName()),
                               QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) == QMessageBox::Yes;
}

bool MainWindow::save_scenario(const QString& path) {
  if (path != scenario_path_ && !confirm_replace(path)) return false;
  try {
    const std::string text = panel_->document().dump(2) + "\n";
    write_file_atomically(path.toStdString(), [&](std::ostream& out) { out << text; });
  } catch (const InputError& e) {
    warn(QString::fromStdString(e.what()));
    return false;
  }
  scenario_path_ = path;
  statusBar()->showMessage(tr("Saved %1").arg(path));
  return true;
}

void MainWindow::save_as() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save scenario"), scenario_path_, tr("Scenario (*.json)"),
                                                    nullptr, QFileDialog::DontConfirmOverwrite);
  if (!path.isEmpty()) save_scenario(path);
}

bool MainWindow::export_timeline_to(const QString& path) {
  if (!steps_[0] && !steps_[1]) {
    warn(tr("Nothing to export yet: run a scenario or open a trace first."));
    return false;
  }
  if (!confirm_replace(path)) return false;
  try {
    export_timeline(*view_, path);
  } catch (const InputError& e) {
    warn(QString::fromStdString(e.what()));
    return false;
  }
  statusBar()->showMessage(tr("Exported %1").arg(path));
  return true;
}

void MainWindow::export_as(const QString& extension) {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export timeline"), "timeline." + extension,
                                   extension.toUpper() + " (*." + extension + ")", nullptr,
                                   QFileDialog::DontConfirmOverwrite);
  if (!path.isEmpty()) export_timeline_to(path);
}

}  // namespace simtrain::gui
