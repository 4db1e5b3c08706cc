#pragma once
// The scenario being edited, as a form: model (presets from the built-in
// scenarios, or a Hugging Face config.json imported inline), GPU, topology,
// parallelism, batch, schedule, recompute, ZeRO. It edits the scenario's JSON
// document (fields without a widget are kept as they are) and re-reads it with
// parse_scenario after every edit, so an invalid combination shows the CLI's
// own message and the offending field is marked.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <QWidget>
#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;

namespace simtrain::gui {

class ScenarioPanel : public QWidget {
  Q_OBJECT
public:
  explicit ScenarioPanel(QWidget* parent = nullptr);

  // `source` names the scenario in messages; relative paths in it resolve against `base_dir`.
  void set_document(nlohmann::json document, const std::string& source, const std::string& base_dir);
  // A built-in scenario's name or a scenario file. Throws InputError if it
  // is no JSON file; the form then keeps the scenario it held, and with none
  // it stays empty and says that the file could not be read, and why.
  void load(const std::string& path_or_name);
  // Until a scenario is loaded (or given) the form is hidden and error() says how to get one.
  bool has_document() const { return has_document_; }
  // Replaces the document being edited, of the same file, as edits do.
  void edit_document(nlohmann::json document) { set_document(std::move(document), source_, base_dir_); }
  // Replaces the model by a Hugging Face config.json's, written inline. Throws InputError.
  void import_model_config(const std::string& path);
  // A trace holds no scenario: shows what it says of itself in place of the
  // form, and nothing to run, until a scenario is loaded or "Edit the
  // scenario" brings the form (and the document it held) back.
  void show_trace(const std::vector<std::pair<std::string, std::string>>& facts);
  bool showing_trace() const;
  const QGroupBox* trace_box() const { return trace_box_; }

  const nlohmann::json& document() const { return document_; }
  const std::optional<Scenario>& scenario() const { return scenario_; }  // when valid
  QString error() const;  // the InputError of the edited scenario, empty when valid
  // The widget that edits the field at `pointer`, e.g. "/parallelism/tensor_model_parallel_size".
  QWidget* field(const std::string& pointer) const;
  // Under the form: whether the scenario is valid, or why not.
  const QLabel& status() const { return *status_; }
  // The message shown under that field when the scenario's error names it (hidden otherwise).
  QLabel* field_message(const std::string& pointer) const;

signals:
  void changed();

private:
  struct Binding {
    nlohmann::json::json_pointer pointer;
    QWidget* widget;
    std::function<void()> show;  // document -> widget
    QLabel* message;             // under the widget: the error when it names this field
  };

  // Adds the widget's row, and its message's under it, and binds it to `pointer`.
  void bind(QFormLayout* form, const QString& label, QWidget* widget, const std::string& pointer,
            std::function<void()> show);
  QFormLayout* add_group(const QString& title);
  void add_integer(QFormLayout* form, const QString& label, const std::string& pointer, int minimum, int maximum,
                   const QString& unset_text = {});
  void add_choice(QFormLayout* form, const QString& label, const std::string& pointer,
                  const std::vector<std::string>& choices, const QString& unset_text = {});
  void add_flag(QFormLayout* form, const QString& label, const std::string& pointer);
  void add_text(QFormLayout* form, const QString& label, const std::string& pointer);
  void write(const nlohmann::json::json_pointer& pointer, const std::optional<nlohmann::json>& value);
  void show_document();
  void show_form();
  void show_without_form(const QString& why);  // with `why` as the error
  QString no_scenario_yet() const;
  void validate();

  nlohmann::json document_ = nlohmann::json::object();
  bool has_document_ = false;
  std::string source_ = "untitled.json";
  std::string base_dir_ = ".";
  std::optional<Scenario> scenario_;
  QString error_;
  std::vector<Binding> bindings_;
  std::vector<nlohmann::json> model_presets_;
  QComboBox* model_presets_box_;
  QGroupBox* model_group_ = nullptr;
  std::vector<QGroupBox*> form_groups_;
  QGroupBox* trace_box_;
  QLabel* status_;
};

}  // namespace simtrain::gui
