// Editing a scenario in the form: invalid combinations show the CLI's own
// message and mark the field; presets and config.json import; saving never
// replaces a file without asking; a run can be cancelled.
#include <filesystem>
#include <fstream>

#include <QComboBox>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QApplication>
#include <QSpinBox>
#include <QStatusBar>
#include <QWheelEvent>
#include <QTemporaryDir>
#include <QTest>

#include "gui_test_support.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

using namespace simtrain;
using namespace simtrain::gui;

class ScenarioPanelTest : public QObject {
  Q_OBJECT

  static QSpinBox* spin(ScenarioPanel& panel, const std::string& pointer) {
    return qobject_cast<QSpinBox*>(panel.field(pointer));
  }

private slots:
  void invalidEditsShowTheClisMessage() {
    ScenarioPanel panel;
    panel.load("tiny-4gpu");
    QVERIFY(panel.scenario());
    QCOMPARE(panel.error(), QString());

    QSpinBox* tp = spin(panel, "/parallelism/tensor_model_parallel_size");
    tp->setValue(3);
    QCOMPARE(panel.error(), QString("scenarios/tiny-4gpu.json: parallelism.tensor_model_parallel_size: must divide "
                                    "num_attention_heads (16), got 3"));
    QVERIFY(!panel.scenario());
    QVERIFY(!tp->styleSheet().isEmpty());  // the field is marked
    const QLabel* beside = panel.field_message("/parallelism/tensor_model_parallel_size");
    QVERIFY(!beside->isHidden());  // and the reason is under it
    QCOMPARE(beside->text(), QString("must divide num_attention_heads (16), got 3"));
    QVERIFY(panel.field_message("/parallelism/pipeline_model_parallel_size")->isHidden());
    tp->setValue(2);
    QCOMPARE(panel.error(), QString());
    QVERIFY(tp->styleSheet().isEmpty());
    QVERIFY(beside->isHidden());

    spin(panel, "/training/micro_batch_size")->setValue(3);
    QVERIFY(panel.error().endsWith("training.global_batch_size: must be a multiple of micro_batch_size x data "
                                   "parallel size (3 x 1), got 8"));
    spin(panel, "/training/micro_batch_size")->setValue(1);

    // The same message as `simtrain simulate` gives for the same document.
    spin(panel, "/cluster/num_gpus")->setValue(6);
    try {
      parse_scenario(panel.document(), "scenarios/tiny-4gpu.json", ".");
      QFAIL("accepted");
    } catch (const InputError& e) {
      QCOMPARE(panel.error(), QString(e.what()));
    }
    QVERIFY(panel.error().contains("cluster.num_gpus: must be a multiple of tensor x pipeline parallel size (4), got 6"));
  }

  void unsetFieldsLeaveTheDocument() {
    ScenarioPanel panel;
    panel.load("tiny-4gpu");
    QSpinBox* dp = spin(panel, "/parallelism/data_parallel_size");
    dp->setValue(1);
    QVERIFY(panel.document()["parallelism"]["data_parallel_size"] == 1);
    dp->setValue(0);  // "GPUs / (TP x PP)"
    QVERIFY(!panel.document()["parallelism"].contains("data_parallel_size"));
    QVERIFY(panel.scenario());
    auto* schedule = qobject_cast<QComboBox*>(panel.field("/parallelism/schedule"));
    QCOMPARE(schedule->currentText(), QString("1f1b"));
  }

  void importsAHuggingFaceConfig() {
    QTemporaryDir dir;
    const std::filesystem::path folder = std::filesystem::path(dir.path().toStdString()) / "Llama-2-7b-hf";
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
      "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
      "num_key_value_heads": 32, "rms_norm_eps": 1e-05, "vocab_size": 32000, "hidden_act": "silu",
      "max_position_embeddings": 4096, "tie_word_embeddings": false})";
    ScenarioPanel panel;
    panel.load("tiny-4gpu");
    panel.import_model_config((folder / "config.json").string());
    const nlohmann::json& model = panel.document()["model"];
    QVERIFY(model["name"] == "Llama-2-7b-hf");
    QVERIFY(model["hidden_size"] == 4096);
    QVERIFY(model["norm"] == "rmsnorm");
    QVERIFY(model["hidden_act"] == "silu");
    QCOMPARE(spin(panel, "/model/num_hidden_layers")->value(), 32);
    QVERIFY2(panel.scenario(), qPrintable(panel.error()));
    QCOMPARE(panel.scenario()->model.num_layers, 32);
    QVERIFY(panel.scenario()->model.gated_mlp);
  }

  void savingAsksBeforeReplacingAFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath("mine.json");
    MainWindow window;
    window.scenario_panel().load("tiny-4gpu");
    QVERIFY(window.save_scenario(path));  // a new file: no question
    QVERIFY(read_json_file(path.toStdString()) == window.scenario_panel().document());
    QVERIFY(window.save_scenario(path));  // the file it saved: no question either

    std::ofstream(dir.filePath("other.json").toStdString()) << "{}";
    testing::answer_next_message_box(QMessageBox::Cancel);
    QVERIFY(!window.save_scenario(dir.filePath("other.json")));
    QVERIFY(read_json_file(dir.filePath("other.json").toStdString()) == nlohmann::json::object());
    testing::answer_next_message_box(QMessageBox::Yes);
    QVERIFY(window.save_scenario(dir.filePath("other.json")));
    QVERIFY(read_json_file(dir.filePath("other.json").toStdString())["name"] == "tiny-4gpu");
  }

  void theWheelEditsOnlyAFocusedField() {
    ScenarioPanel panel;
    panel.load("tiny-4gpu");
    panel.show();
    QSpinBox* sequence = spin(panel, "/training/seq_length");
    const int before = sequence->value();
    const QPoint centre = sequence->rect().center();
    auto wheel = [&] {
      QWheelEvent event(centre, sequence->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                        Qt::NoScrollPhase, false);
      QApplication::sendEvent(sequence, &event);
      return event.isAccepted();
    };
    QVERIFY(!sequence->hasFocus());
    QVERIFY(!wheel());  // left to the scroll area around the form
    QCOMPARE(sequence->value(), before);
    QCOMPARE(sequence->focusPolicy(), Qt::StrongFocus);  // a wheel does not take the focus either
    sequence->setFocus();
    QVERIFY(QTest::qWaitFor([&] { return sequence->hasFocus(); }, 2000));
    wheel();
    QCOMPARE(sequence->value(), before + sequence->singleStep());
  }

  // The first half of gui/examples/pp4-1f1b.json, opened in a new window: the
  // form stays empty (no placeholder 1s), and it and Run say why, naming the
  // file and where it breaks off, in plain words.
  void aTruncatedScenarioSaysWhyAndLeavesTheFormEmpty() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("pp4-half.json").toStdString();
    const std::string text = read_input_file(SIMTRAIN_SOURCE_DIR "/gui/examples/pp4-1f1b.json");
    std::ofstream(path) << text.substr(0, text.size() / 2);
    const QString reason = QString::fromStdString(path) +
                           ": malformed JSON at line 10, column 34: unexpected end of input; expected '}' (is the file "
                           "cut short?)";

    MainWindow window;
    window.set_interactive(false);  // problems go to stderr, not to message boxes
    QVERIFY(!window.scenario_panel().has_document());
    QVERIFY(!window.run_button(0).isEnabled());
    QCOMPARE(window.scenario_panel().error(), QString("No scenario yet: pick a built-in scenario above, or open a "
                                                      "scenario file (File menu)."));
    window.open(QString::fromStdString(path));
    const ScenarioPanel& panel = window.scenario_panel();
    QVERIFY(!panel.has_document());
    QVERIFY(!panel.scenario());
    QCOMPARE(panel.error(), "Could not read the scenario: " + reason);
    QVERIFY(!panel.error().contains("json.exception"));
    QVERIFY(!panel.field("/model/hidden_size")->isVisibleTo(&panel));  // no form of 1s
    QVERIFY(!window.run_button(0).isEnabled() && !window.run_button(1).isEnabled());
    window.run(0);
    QCOMPARE(window.statusBar()->currentMessage(), "Could not read the scenario: " + reason);
    QVERIFY(!window.busy());
  }

  // Opened over a scenario, it leaves the form as it was, and says so.
  void aTruncatedScenarioKeepsTheFormItHeld() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("cut.json").toStdString();
    std::ofstream(path) << "{\"name\": \"cut\", \"model\": {";
    ScenarioPanel panel;
    panel.load("tiny-4gpu");
    try {
      panel.load(path);
      QFAIL("accepted");
    } catch (const InputError& e) {
      QVERIFY(QString(e.what()).startsWith(QString::fromStdString(path) + ": malformed JSON at line 1, column "));
    }
    QVERIFY(panel.scenario());
    QCOMPARE(panel.document().value("name", std::string()), std::string("tiny-4gpu"));
    QCOMPARE(spin(panel, "/model/hidden_size")->value(), 1024);
    QVERIFY(panel.field("/model/hidden_size")->isVisibleTo(&panel));
    const QString status = panel.status().text();
    QVERIFY2(status.startsWith("Could not read the scenario: " + QString::fromStdString(path) + ": malformed JSON at "),
             qPrintable(status));
    QVERIFY(status.endsWith("\nThe form still holds scenarios/tiny-4gpu.json."));
  }

  void theMessageThatDisablesRunIsInTheStatusBar() {
    MainWindow window;
    window.scenario_panel().load("tiny-4gpu");
    spin(window.scenario_panel(), "/parallelism/tensor_model_parallel_size")->setValue(3);
    QCOMPARE(window.statusBar()->currentMessage(), window.scenario_panel().error());
    QVERIFY(window.statusBar()->currentMessage().contains("must divide num_attention_heads"));
  }

  void aRunCanBeCancelled() {
    MainWindow window;
    window.show();
    window.open("megatron-1t-3072xa100");  // seconds of work even on a fast machine (GPT-3 175B's 0.4 s are not)
    QVERIFY(window.busy());
    QTest::qWait(300);  // the window keeps handling events meanwhile
    window.cancel();
    QVERIFY(QTest::qWaitFor([&] { return !window.busy(); }, 120'000));
    QVERIFY(!window.step(0));
    QVERIFY2(window.progress_bar().format().contains("cancelled"), qPrintable(window.progress_bar().format()));
  }
};

QTEST_MAIN(ScenarioPanelTest)
#include "test_scenario_panel.moc"
