#include "compare_view.hpp"

#include <algorithm>
#include <cmath>

#include <QPainter>
#include <QSplitter>
#include <QVBoxLayout>

namespace simtrain::gui {

// Entries that do not fit its width wrap onto a new row: its height follows
// its width (set by fit_height, as the view's width changes).
class LegendBar : public QWidget {
public:
  LegendBar() { fit_height(); }
  const std::vector<LegendEntry>& entries() const { return entries_; }
  void set_entries(std::vector<LegendEntry> entries) {
    entries_ = std::move(entries);
    fit_height();
    update();
  }
  int height_at(int width) const {
    return static_cast<int>(std::ceil(legend_height(entries_, QFontMetricsF(font()), width)));
  }
  void fit_height() {
    setMinimumWidth(static_cast<int>(std::ceil(legend_minimum_width(entries_, QFontMetricsF(font())))));
    setFixedHeight(height_at(width()));
  }

protected:
  void paintEvent(QPaintEvent*) override {
    QPainter painter(this);
    paint_legend(painter, entries_, width());
  }
  void resizeEvent(QResizeEvent*) override { fit_height(); }

private:
  std::vector<LegendEntry> entries_ = legend_entries(1);
};

namespace {

QString slot_title(int slot, const TimelineModel& model) {
  return QString(slot == 0 ? "A: " : "B: ") + QString::fromStdString(model.step().title);
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent), splitter_(new QSplitter(Qt::Vertical)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  legend_ = new LegendBar;
  layout->addWidget(legend_);
  layout->addWidget(splitter_, 1);
  for (int slot = 0; slot < 2; ++slot) {
    timelines_[slot] = new TimelineWidget(scale_);
    splitter_->addWidget(timelines_[slot]);
    connect(timelines_[slot], &TimelineWidget::task_selected, this, &CompareView::task_selected);
    connect(timelines_[slot], &TimelineWidget::rows_changed, this, &CompareView::share_height);
  }
  splitter_->addWidget(new QWidget);  // takes what short timelines leave
  timelines_[0]->set_model(nullptr, tr("Run a scenario (left) or open a trace (File menu)."));
  timelines_[1]->hide();
}

void CompareView::set_step(int slot, std::shared_ptr<const TimelineModel> model) {
  const QString title = model ? slot_title(slot, *model) : QString();
  timelines_[slot]->set_model(std::move(model), title);
  if (slot == 1) timelines_[1]->setVisible(timelines_[1]->model() != nullptr);
  legend_->set_entries(legend_entries(model_chunks(), hosts_shown()));
  share_height();
  fit_all();
}

void CompareView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  share_height();
}

void CompareView::share_height() {
  std::vector<int> wanted;
  for (const TimelineWidget* t : timelines_) wanted.push_back(t->isHidden() ? 0 : t->rows_height());
  int left = splitter_->height() - splitter_->handleWidth() * 2;
  // The shorter wish first: what it leaves goes to the other.
  const int first = wanted[0] <= wanted[1] ? 0 : 1;
  QList<int> sizes = {0, 0, 0};
  for (int slot : {first, 1 - first}) {
    const int others = slot == first && wanted[1 - first] > 0 ? 2 : 1;
    sizes[slot] = std::min(wanted[slot], left / others);
    left -= sizes[slot];
  }
  // What short timelines leave goes to them as well: their lanes grow to fill it.
  const int shown = (wanted[0] > 0 ? 1 : 0) + (wanted[1] > 0 ? 1 : 0);
  for (int slot : {0, 1})
    if (wanted[slot] > 0) sizes[slot] += left / shown;
  sizes[2] = left - (shown ? left / shown * shown : 0);
  splitter_->setSizes(sizes);
}

int CompareView::model_chunks() const {
  int chunks = 1;
  for (const TimelineWidget* t : timelines_)
    if (t->model()) chunks = std::max(chunks, t->model()->program().virtual_stages);
  return chunks;
}

bool CompareView::hosts_shown() const {
  for (const TimelineWidget* t : timelines_)
    if (t->model() && t->model()->hosts_simulated()) return true;
  return false;
}

const std::vector<LegendEntry>& CompareView::legend() const { return legend_->entries(); }

int CompareView::legend_height_at(int width) const { return legend_->height_at(width); }

bool CompareView::comparing() const { return timelines_[1]->model() != nullptr; }

void CompareView::fit_all() {
  double longest = 0;
  for (TimelineWidget* t : timelines_)
    if (t->model()) longest = std::max(longest, t->model()->step_seconds());
  timelines_[0]->fit_time(longest);
}

void CompareView::show_critical_path(bool shown) {
  for (TimelineWidget* t : timelines_) t->show_critical_path(shown);
}

void CompareView::show_all_ranks(bool shown) {
  for (TimelineWidget* t : timelines_) t->show_all_ranks(shown);
}

QSize CompareView::export_size() const {
  QSize size(0, 0);
  for (const TimelineWidget* t : timelines_)
    if (t->model()) size = QSize(std::max(size.width(), t->viewport()->width()), size.height() + t->viewport()->height());
  return size + QSize(0, legend_height_at(size.width()));
}

void CompareView::paint_export(QPainter& painter) const {
  const QSize size = export_size();
  painter.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  painter.setFont(font());  // as measured for export_size
  paint_legend(painter, legend(), size.width());
  painter.save();
  painter.translate(0, legend_height_at(size.width()));
  for (const TimelineWidget* t : timelines_) {
    if (!t->model()) continue;
    t->paint_view(painter);
    painter.translate(0, t->viewport()->height());
  }
  painter.restore();
}

}  // namespace simtrain::gui
