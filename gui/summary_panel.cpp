#include "summary_panel.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTableWidget>
#include <QVBoxLayout>

#include "memory_bars.hpp"
#include "text_format.hpp"

namespace simtrain::gui {

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

enum class Unit { seconds, fraction, tokens_per_second, tflops, bytes };

struct Figure {
  const char* label;
  Unit unit;
  bool lower_is_better;
  std::function<std::optional<double>(const StepResult&)> value;
};

// Figures a trace does not give (no scenario) are absent.
std::function<std::optional<double>(const StepResult&)> simulated(double StepReport::*field) {
  return [field](const StepResult& s) { return s.scenario ? std::optional(s.report.*field) : std::nullopt; };
}
std::function<std::optional<double>(const StepResult&)> timed(double TimeSplit::*field) {
  return [field](const StepResult& s) { return std::optional(s.report.mean_split.*field); };
}

const std::vector<Figure>& figure_rows() {
  static const std::vector<Figure> rows = {
      {"step time", Unit::seconds, true, [](const StepResult& s) { return std::optional(s.report.step_seconds); }},
      {"throughput", Unit::tokens_per_second, false, simulated(&StepReport::tokens_per_second)},
      {"TFLOP/s per GPU", Unit::tflops, false, simulated(&StepReport::model_tflops_per_gpu)},
      {"MFU", Unit::fraction, false, simulated(&StepReport::mfu)},
      {"pipeline bubble", Unit::fraction, true, [](const StepResult& s) { return std::optional(s.report.bubble_fraction); }},
      {"GPU waiting for host", Unit::seconds, true, [](const StepResult& s) { return s.report.host_wait_seconds; }},
      {"exposed TP comm", Unit::seconds, true, timed(&TimeSplit::exposed_tp_seconds)},
      {"exposed EP comm", Unit::seconds, true, timed(&TimeSplit::exposed_ep_seconds)},
      {"exposed CP comm", Unit::seconds, true, timed(&TimeSplit::exposed_cp_seconds)},
      {"exposed PP comm", Unit::seconds, true, timed(&TimeSplit::exposed_pp_seconds)},
      {"exposed DP comm", Unit::seconds, true, timed(&TimeSplit::exposed_dp_seconds)},
      {"peak memory/GPU", Unit::bytes, true, simulated(&StepReport::peak_memory_bytes)},
  };
  return rows;
}

QString formatted(Unit unit, double value) {
  switch (unit) {
    case Unit::seconds: return QString::fromStdString(format_duration(value));
    case Unit::fraction: return QString::fromStdString(format_percent(value));
    case Unit::tokens_per_second: return QLocale(QLocale::English).toString(value, 'f', 0) + " tok/s";
    case Unit::tflops: return QString::number(value, 'f', 1);
    case Unit::bytes: return QString::number(value / GiB, 'f', 1) + " GiB";
  }
  return {};
}

QTableWidget* read_only_table(int columns) {
  auto* table = new QTableWidget(0, columns);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionMode(QAbstractItemView::NoSelection);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->horizontalHeader()->setStretchLastSection(true);
  table->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  return table;
}

// Every column whole: the table is at least as wide as its columns and their headers need.
void fit_width_to_columns(QTableWidget* table) {
  const QAbstractItemView* view = table;  // where sizeHintForColumn is public
  const QHeaderView* header = table->horizontalHeader();
  int width = 2 * table->frameWidth();
  for (int column = 0; column < table->columnCount(); ++column) {
    int needed = std::max(header->sectionSizeHint(column), view->sizeHintForColumn(column));
    // Qt keeps a stretched last column at least its default width.
    if (column == table->columnCount() - 1 && header->stretchLastSection())
      needed = std::max(needed, header->defaultSectionSize());
    width += needed;
  }
  table->setMinimumWidth(width);
}

void set_cell(QTableWidget* table, int row, int column, const QString& text, const QColor& color = {}) {
  auto* item = new QTableWidgetItem(text);
  if (color.isValid()) item->setForeground(color);
  table->setItem(row, column, item);
}

}  // namespace

SummaryPanel::SummaryPanel(QWidget* parent)
    : QWidget(parent), names_(new QLabel), figures_(read_only_table(2)), stages_(read_only_table(10)),
      notes_(new QLabel) {
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(names_);
  layout->addWidget(figures_);
  auto* where = new QLabel(tr("<b>Where the time went</b> per pipeline stage (its tp 0, dp 0 rank): compute, "
                              "communication not hidden by compute (TP, EP, CP, PP, DP), idle; host-bound: "
                              "the compute stream waiting for its host to launch kernels"));
  where->setWordWrap(true);
  layout->addWidget(where);
  stages_->setHorizontalHeaderLabels({tr("stage"), tr("compute"), tr("TP"), tr("EP"), tr("CP"), tr("PP"), tr("DP"),
                                      tr("idle"), tr("bubble"), tr("host-bound")});
  layout->addWidget(stages_);
  for (int slot = 0; slot < 2; ++slot) {
    memory_titles_[slot] = new QLabel;
    memory_[slot] = new MemoryBars;
    layout->addWidget(memory_titles_[slot]);
    layout->addWidget(memory_[slot]);
  }
  notes_->setWordWrap(true);
  layout->addWidget(notes_);
  layout->addStretch(1);
  set_steps(nullptr, nullptr);
}

void SummaryPanel::set_steps(const StepResult* a, const StepResult* b) {
  const std::vector<Figure>& rows = figure_rows();
  figures_->setColumnCount(b ? 4 : 2);
  QStringList headers = {tr("figure"), tr("A")};
  if (b) headers << tr("B") << tr("B − A");
  figures_->setHorizontalHeaderLabels(headers);
  QString names = a ? "A: " + QString::fromStdString(a->title) : QString();
  if (b) names += "<br>B: " + QString::fromStdString(b->title);
  names_->setText(names);
  figures_->setRowCount(static_cast<int>(rows.size()));
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const Figure& f = rows[i];
    set_cell(figures_, i, 0, tr(f.label));
    const std::optional<double> va = a ? f.value(*a) : std::nullopt;
    set_cell(figures_, i, 1, va ? formatted(f.unit, *va) : "—");
    if (!b) continue;
    const std::optional<double> vb = f.value(*b);
    set_cell(figures_, i, 2, vb ? formatted(f.unit, *vb) : "—");
    if (va && vb) {
      const std::optional<std::string> change = format_change(*va, *vb, f.unit == Unit::fraction);
      const bool better = f.lower_is_better ? *vb < *va : *vb > *va;
      set_cell(figures_, i, 3, change ? QString::fromStdString(*change) : tr("same"),
               !change ? QColor() : better ? QColor(26, 127, 55) : QColor(180, 35, 24));
      figures_->item(i, 3)->setToolTip(QString::fromUtf8("B − A = ") + (*vb >= *va ? "+" : "−") +
                                       formatted(f.unit, std::fabs(*vb - *va)));
    } else {
      set_cell(figures_, i, 3, "—");
    }
  }
  fit_width_to_columns(figures_);
  show_stages(a, b);

  const StepResult* steps[2] = {a, b};
  for (int slot = 0; slot < 2; ++slot) {
    const StepResult* s = steps[slot];
    const bool shown = s && s->scenario;
    memory_titles_[slot]->setVisible(shown);
    memory_[slot]->setVisible(shown);
    if (!shown) continue;
    std::vector<MemoryBreakdown> memory;
    for (const StageFigures& stage : s->report.stages) memory.push_back(stage.memory);
    memory_[slot]->set_memory(memory, s->report.gpu_memory_bytes);
    memory_titles_[slot]->setText(tr("<b>Memory per GPU</b>%1 on %2")
                                      .arg(b ? QString(slot == 0 ? " (A)" : " (B)") : QString())
                                      .arg(QString::fromStdString(s->scenario->cluster.gpu.name)));
  }

  QString notes;
  if (a && a->scenario) {
    notes = tr("Compute times of A from (ops per class):");
    for (const auto& [op_class, sources] : a->report.time_sources) {
      QStringList counts;
      for (const auto& [source, count] : sources)
        counts << QLocale(QLocale::English).toString(count) + " " + QString::fromStdString(source);
      notes += QString(" %1 (%2)").arg(QString::fromStdString(op_class), counts.join(", "));
    }
  }
  notes_->setText(notes);
}

void SummaryPanel::show_stages(const StepResult* a, const StepResult* b) {
  stages_->setRowCount(0);
  const StepResult* steps[2] = {a, b};
  for (int slot = 0; slot < 2; ++slot) {
    const StepResult* s = steps[slot];
    if (!s) continue;
    for (const StageFigures& stage : s->report.stages) {
      const int row = stages_->rowCount();
      stages_->insertRow(row);
      const TimeSplit& t = stage.time;
      set_cell(stages_, row, 0, (b ? QString(slot == 0 ? "A " : "B ") : QString()) + QString::number(stage.pipeline_rank));
      int column = 1;
      for (double seconds : {t.compute_seconds, t.exposed_tp_seconds, t.exposed_ep_seconds, t.exposed_cp_seconds,
                             t.exposed_pp_seconds, t.exposed_dp_seconds, t.idle_seconds})
        set_cell(stages_, row, column++, QString::fromStdString(format_duration(seconds)));
      set_cell(stages_, row, column++, QString::fromStdString(format_percent(t.idle_seconds / s->report.step_seconds)));
      // None where the hosts were not simulated (--free-launches), nor from a trace: it does not carry it.
      set_cell(stages_, row, column,
               s->report.host_wait_seconds ? QString::fromStdString(format_duration(stage.host_wait_seconds)) : "—");
    }
  }
  fit_width_to_columns(stages_);
}

}  // namespace simtrain::gui
