#include "scenario_panel.hpp"

#include <algorithm>
#include <filesystem>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "wheel_when_focused.hpp"
#include "sim/base/embedded_files.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

namespace simtrain::gui {

namespace {

using Pointer = nlohmann::json::json_pointer;

const char* invalid_style = "background-color: #fde2e1;";
const char* message_style = "color: #b42318;";

// The model a Hugging Face config.json describes, read as parse_scenario reads
// a model given by path (leniently), wrapped in the smallest valid scenario.
ModelConfig model_of_config(const std::string& path) {
  const nlohmann::json probe = {
      {"model", std::filesystem::absolute(path).string()},
      {"training", {{"seq_length", 1}, {"global_batch_size", 1}}},
      {"cluster", {{"gpu", builtin_gpus().front().name}, {"num_gpus", 1}, {"topology", builtin_topology_names().front()}}}};
  return parse_scenario(probe, path, ".").model;
}

QString qt(const std::string& text) { return QString::fromStdString(text); }

}  // namespace

ScenarioPanel::ScenarioPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* presets = new WheelWhenFocused<QComboBox>;
  presets->addItem(tr("Built-in scenarios…"));
  for (const EmbeddedFile& f : embedded_scenarios()) presets->addItem(qt(std::string(f.name)));
  connect(presets, &QComboBox::activated, this, [this, presets](int index) {
    if (index > 0) load(presets->itemText(index).toStdString());
    presets->setCurrentIndex(0);
  });
  layout->addWidget(presets);
  trace_box_ = new QGroupBox(tr("Trace"));
  trace_box_->hide();
  layout->addWidget(trace_box_);

  QFormLayout* top = add_group(tr("Scenario"));
  add_text(top, tr("name"), "/name");

  QFormLayout* model = add_group(tr("Model"));
  model_group_ = qobject_cast<QGroupBox*>(model->parentWidget());
  model_presets_box_ = new WheelWhenFocused<QComboBox>;
  model_presets_box_->addItem(tr("Model presets…"));
  for (const EmbeddedFile& f : embedded_scenarios()) {
    const nlohmann::json document = nlohmann::json::parse(f.text);
    if (!document.contains("model") || !document["model"].is_object()) continue;
    model_presets_.push_back(document["model"]);
    model_presets_box_->addItem(qt(document["model"].value("name", std::string(f.name))));
  }
  connect(model_presets_box_, &QComboBox::activated, this, [this](int index) {
    if (index > 0) write(Pointer("/model"), model_presets_[index - 1]);
    model_presets_box_->setCurrentIndex(0);
  });
  auto* import = new QPushButton(tr("Import…"));
  import->setToolTip(tr("Use the model of a Hugging Face config.json"));
  connect(import, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Hugging Face config.json"), {}, tr("JSON (*.json)"));
    if (path.isEmpty()) return;
    try {
      import_model_config(path.toStdString());
    } catch (const InputError& e) {
      status_->setText(qt(e.what()));
    }
  });
  auto* model_sources = new QHBoxLayout;
  model_sources->addWidget(model_presets_box_, 1);
  model_sources->addWidget(import);
  model->addRow(model_sources);
  add_integer(model, tr("hidden size"), "/model/hidden_size", 1, 1 << 20);
  add_integer(model, tr("layers"), "/model/num_hidden_layers", 1, 1 << 16);
  add_integer(model, tr("attention heads"), "/model/num_attention_heads", 1, 1 << 16);
  add_integer(model, tr("KV heads"), "/model/num_key_value_heads", 0, 1 << 16, tr("= heads"));
  add_integer(model, tr("MLP width"), "/model/intermediate_size", 0, 1 << 24, tr("4 × hidden"));
  add_integer(model, tr("vocabulary"), "/model/vocab_size", 1, 1 << 24);
  add_integer(model, tr("position table"), "/model/max_position_embeddings", 0, 1 << 24, tr("none"));

  QFormLayout* training = add_group(tr("Training"));
  add_integer(training, tr("sequence length"), "/training/seq_length", 1, 1 << 24);
  add_integer(training, tr("micro-batch size"), "/training/micro_batch_size", 1, 1 << 20);
  add_integer(training, tr("global batch size"), "/training/global_batch_size", 1, 1 << 30);
  add_choice(training, tr("dtype"), "/training/dtype", {"bf16", "fp16", "fp8"});
  add_choice(training, tr("recompute"), "/training/recompute_granularity", {"none", "selective", "full"});

  QFormLayout* parallel = add_group(tr("Parallelism"));
  add_integer(parallel, tr("tensor parallel (TP)"), "/parallelism/tensor_model_parallel_size", 1, 1 << 16);
  add_integer(parallel, tr("pipeline parallel (PP)"), "/parallelism/pipeline_model_parallel_size", 1, 1 << 16);
  add_integer(parallel, tr("data parallel (DP)"), "/parallelism/data_parallel_size", 0, 1 << 20, tr("auto"));
  add_integer(parallel, tr("layers per virtual stage"), "/parallelism/num_layers_per_virtual_pipeline_stage", 0,
              1 << 16, tr("none"));
  add_choice(parallel, tr("schedule"), "/parallelism/schedule",
             {"gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "dualpipe", "dualpipe_v"},
             tr("default"));
  add_integer(parallel, tr("ZeRO stage"), "/parallelism/zero_stage", 0, 3);
  add_flag(parallel, tr("sequence parallel"), "/parallelism/sequence_parallel");
  add_flag(parallel, tr("overlap gradient reduction"), "/parallelism/overlap_grad_reduce");
  add_flag(parallel, tr("overlap pipeline transfers"), "/parallelism/overlap_p2p_communication");

  QFormLayout* cluster = add_group(tr("Cluster"));
  std::vector<std::string> gpus;
  for (const GpuSpec& gpu : builtin_gpus()) gpus.push_back(gpu.name);
  add_choice(cluster, tr("GPU"), "/cluster/gpu", gpus);
  add_integer(cluster, tr("GPUs"), "/cluster/num_gpus", 1, 1 << 24);
  add_choice(cluster, tr("topology"), "/cluster/topology", builtin_topology_names());

  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  layout->addStretch(1);
  show_without_form(no_scenario_yet());
}

QString ScenarioPanel::no_scenario_yet() const {
  return tr("No scenario yet: pick a built-in scenario above, or open a scenario file (File menu).");
}

QFormLayout* ScenarioPanel::add_group(const QString& title) {
  auto* group = new QGroupBox(title);
  auto* form = new QFormLayout(group);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  static_cast<QVBoxLayout*>(layout())->addWidget(group);
  form_groups_.push_back(group);
  return form;
}

void ScenarioPanel::show_trace(const std::vector<std::pair<std::string, std::string>>& facts) {
  delete trace_box_->layout();
  qDeleteAll(trace_box_->findChildren<QWidget*>(Qt::FindDirectChildrenOnly));
  auto* form = new QFormLayout(trace_box_);
  for (const auto& [label, value] : facts) {
    auto* text = new QLabel(qt(value));
    text->setWordWrap(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(qt(label), text);
  }
  auto* edit = new QPushButton(tr("Edit the scenario"));
  edit->setToolTip(tr("Back to the form, as it was before the trace was opened"));
  connect(edit, &QPushButton::clicked, this, [this] {
    if (!has_document_) return show_without_form(no_scenario_yet());
    show_form();
    validate();
  });
  form->addRow(edit);
  show_without_form(tr("A trace holds timings, not a scenario: pick a built-in scenario or open one to run it."));
  trace_box_->show();
}

bool ScenarioPanel::showing_trace() const { return !trace_box_->isHidden(); }

void ScenarioPanel::show_without_form(const QString& why) {
  trace_box_->hide();
  for (QGroupBox* group : form_groups_) group->hide();
  scenario_.reset();
  error_ = why;
  status_->setStyleSheet("");
  status_->setText(error_);
  emit changed();
}

void ScenarioPanel::show_form() {
  trace_box_->hide();
  for (QGroupBox* group : form_groups_) group->show();
}

void ScenarioPanel::add_integer(QFormLayout* form, const QString& label, const std::string& pointer, int minimum,
                                int maximum, const QString& unset_text) {
  auto* box = new WheelWhenFocused<QSpinBox>;
  box->setRange(minimum, maximum);
  box->setSpecialValueText(unset_text);  // shown at the minimum, which then means "not set"
  const Pointer at(pointer);
  connect(box, &QSpinBox::valueChanged, this, [this, at, box, unset = !unset_text.isEmpty()](int value) {
    write(at, unset && value == box->minimum() ? std::nullopt : std::optional<nlohmann::json>(value));
  });
  bind(form, label, box, pointer, [this, at, box] {
    const nlohmann::json value = document_.contains(at) ? document_[at] : nlohmann::json();
    box->setValue(value.is_number() ? value.get<int>() : box->minimum());
  });
}

void ScenarioPanel::add_choice(QFormLayout* form, const QString& label, const std::string& pointer,
                               const std::vector<std::string>& choices, const QString& unset_text) {
  auto* box = new WheelWhenFocused<QComboBox>;
  if (!unset_text.isEmpty()) box->addItem(unset_text);  // no data: not set
  for (const std::string& choice : choices) box->addItem(qt(choice), qt(nlohmann::json(choice).dump()));
  const int fixed_items = box->count();
  const Pointer at(pointer);
  connect(box, &QComboBox::activated, this, [this, at, box](int index) {
    const QVariant data = box->itemData(index);
    write(at, data.isValid() ? std::optional(nlohmann::json::parse(data.toString().toStdString())) : std::nullopt);
  });
  // A value that is none of the choices (a file path, an inline object) gets an item of its own.
  bind(form, label, box, pointer, [this, at, box, fixed_items] {
    while (box->count() > fixed_items) box->removeItem(fixed_items);
    if (!document_.contains(at)) return box->setCurrentIndex(0);
    const QString dumped = qt(document_[at].dump());
    int index = box->findData(dumped);
    if (index < 0) {
      const nlohmann::json& value = document_[at];
      box->addItem(value.is_string() ? qt(value.get<std::string>())
                                     : tr("custom: %1").arg(qt(value.value("name", std::string("inline")))),
                   dumped);
      index = box->count() - 1;
    }
    box->setCurrentIndex(index);
  });
}

void ScenarioPanel::add_flag(QFormLayout* form, const QString& label, const std::string& pointer) {
  auto* box = new QCheckBox;
  const Pointer at(pointer);
  connect(box, &QCheckBox::toggled, this, [this, at](bool on) { write(at, nlohmann::json(on)); });
  bind(form, label, box, pointer, [this, at, box] {
    box->setChecked(document_.contains(at) && document_[at].is_boolean() && document_[at].get<bool>());
  });
}

void ScenarioPanel::add_text(QFormLayout* form, const QString& label, const std::string& pointer) {
  auto* edit = new QLineEdit;
  const Pointer at(pointer);
  connect(edit, &QLineEdit::textEdited, this, [this, at](const QString& text) {
    write(at, text.isEmpty() ? std::nullopt : std::optional<nlohmann::json>(text.toStdString()));
  });
  bind(form, label, edit, pointer, [this, at, edit] {
    const bool set = document_.contains(at) && document_[at].is_string();
    edit->setText(set ? qt(document_[at].get<std::string>()) : QString());
  });
}

void ScenarioPanel::bind(QFormLayout* form, const QString& label, QWidget* widget, const std::string& pointer,
                         std::function<void()> show) {
  form->addRow(label, widget);
  auto* message = new QLabel;
  message->setWordWrap(true);
  message->setStyleSheet(message_style);
  message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(message);
  form->setRowVisible(message, false);
  bindings_.push_back({Pointer(pointer), widget, std::move(show), message});
}

void ScenarioPanel::write(const Pointer& pointer, const std::optional<nlohmann::json>& value) {
  if (value) {
    document_[pointer] = *value;
  } else if (document_.contains(pointer)) {
    document_[pointer.parent_pointer()].erase(pointer.back());
  }
  if (pointer == Pointer("/model")) show_document();
  validate();
}

void ScenarioPanel::set_document(nlohmann::json document, const std::string& source, const std::string& base_dir) {
  document_ = std::move(document);
  has_document_ = true;
  source_ = source;
  base_dir_ = base_dir;
  if (document_.is_object() && document_.contains("model") && document_["model"].is_string()) {
    std::filesystem::path path(document_["model"].get<std::string>());
    if (path.is_relative()) path = std::filesystem::path(base_dir) / path;
    try {
      document_["model"] = to_json(model_of_config(path.string()));
    } catch (const InputError&) {
      // Left as it is: validation reports it.
    }
  }
  show_document();
  validate();
}

void ScenarioPanel::load(const std::string& path_or_name) {
  if (!std::filesystem::exists(path_or_name))
    for (const EmbeddedFile& f : embedded_scenarios())
      if (f.name == path_or_name)
        return set_document(nlohmann::json::parse(f.text), "scenarios/" + path_or_name + ".json", ".");
  const std::string base_dir = std::filesystem::path(path_or_name).parent_path().string();
  nlohmann::json document;
  try {
    document = read_json_file(path_or_name);
  } catch (const InputError& e) {
    const QString why = tr("Could not read the scenario: %1").arg(qt(e.what()));
    if (!has_document_) {
      show_without_form(why);
    } else {
      status_->setStyleSheet(message_style);
      status_->setText(tr("%1\nThe form still holds %2.").arg(why, qt(source_)));
    }
    throw;
  }
  set_document(std::move(document), path_or_name, base_dir.empty() ? "." : base_dir);
}

void ScenarioPanel::import_model_config(const std::string& path) {
  nlohmann::json model = to_json(model_of_config(path));
  if (!read_json_file(path).contains("name"))  // configs seldom name the model; their folder does
    model["name"] = std::filesystem::absolute(path).parent_path().filename().string();
  write(Pointer("/model"), model);
}

void ScenarioPanel::show_document() {
  show_form();
  model_group_->setEnabled(document_.is_object() && document_.value("model", nlohmann::json()).is_object());
  for (const Binding& b : bindings_) {
    const QSignalBlocker blocker(b.widget);
    if (document_.is_object()) b.show();
  }
}

void ScenarioPanel::validate() {
  try {
    scenario_ = parse_scenario(document_, source_, base_dir_);
    error_.clear();
    const Scenario& s = *scenario_;
    status_->setStyleSheet("color: #1a7f37;");
    const QString data = s.parallel.context > 1 ? tr("%1 × CP %2").arg(s.parallel.data).arg(s.parallel.context)
                                                : QString::number(s.parallel.data);
    status_->setText(tr("Valid: %1 GPUs = TP %2 × PP %3 × DP %4, %5 micro-batches per pipeline, %6 model chunks per GPU.")
                         .arg(s.cluster.num_gpus)
                         .arg(s.parallel.tensor)
                         .arg(s.parallel.pipeline)
                         .arg(data)
                         .arg(s.micro_batches())
                         .arg(s.virtual_stages()));
  } catch (const std::exception& e) {  // InputError, or a JSON type error in an odd document
    scenario_.reset();
    error_ = qt(e.what());
    status_->setStyleSheet("color: #b42318;");
    status_->setText(error_);
  }
  // Mark the field the message names ("file: parallelism.tensor_model_parallel_size: ...").
  for (const Binding& b : bindings_) {
    std::string dotted = b.pointer.to_string().substr(1);
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    const QString named_as = qt(": " + dotted + ": ");
    const qsizetype at = error_.indexOf(named_as);
    b.widget->setStyleSheet(at >= 0 ? invalid_style : "");
    b.widget->setToolTip(at >= 0 ? error_ : QString());
    // Beside the field, the reason alone: the file and the field are what the row shows.
    b.message->setText(at >= 0 ? error_.mid(at + named_as.size()) : QString());
    if (auto* form = qobject_cast<QFormLayout*>(b.message->parentWidget()->layout())) form->setRowVisible(b.message, at >= 0);
  }
  emit changed();
}

QString ScenarioPanel::error() const { return error_; }

QWidget* ScenarioPanel::field(const std::string& pointer) const {
  for (const Binding& b : bindings_)
    if (b.pointer == Pointer(pointer)) return b.widget;
  return nullptr;
}

QLabel* ScenarioPanel::field_message(const std::string& pointer) const {
  for (const Binding& b : bindings_)
    if (b.pointer == Pointer(pointer)) return b.message;
  return nullptr;
}

}  // namespace simtrain::gui
