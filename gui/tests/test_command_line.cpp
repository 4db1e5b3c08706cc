// simtrain-gui reads its command line before it opens a window: --help
// prints the usage and --version the version and exit 0, and a mistyped
// option is refused (exit 1), all without a display to reach (where
// QApplication would abort).
#include <QProcess>
#include <QRegularExpression>
#include <QTest>

class CommandLineTest : public QObject {
  Q_OBJECT

  struct Ran {
    QProcess::ExitStatus status;
    int exit_code;
    QString out, err;
  };

  // The built simtrain-gui, with no X or Wayland display and Qt told to use xcb.
  static Ran run_without_display(const QStringList& arguments) {
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.remove("DISPLAY");
    environment.remove("WAYLAND_DISPLAY");
    environment.insert("QT_QPA_PLATFORM", "xcb");
    QProcess gui;
    gui.setProcessEnvironment(environment);
    gui.start(SIMTRAIN_GUI_EXECUTABLE, arguments);
    if (!gui.waitForFinished(60'000)) gui.kill();
    return {gui.exitStatus(), gui.exitCode(), QString::fromLocal8Bit(gui.readAllStandardOutput()),
            QString::fromLocal8Bit(gui.readAllStandardError())};
  }

private slots:
  void helpPrintsTheUsageWithoutADisplay() {
    const Ran ran = run_without_display({"--help"});
    QCOMPARE(ran.status, QProcess::NormalExit);
    QCOMPARE(ran.exit_code, 0);
    QVERIFY2(ran.out.startsWith("Usage: "), qPrintable(ran.out + ran.err));
    QVERIFY(ran.out.contains("[options] file"));
    QVERIFY(ran.out.contains("Edit, simulate and compare LLM training steps"));
    for (const char* option : {"--version", "--compare <file>", "--search <json>", "--screenshot <png>", "--export <file>"})
      QVERIFY2(ran.out.contains(option), option);
  }

  // As `simtrain --version` says it: "simtrain-gui 0.1.0 (git ce5a6dc)".
  void versionPrintsTheVersionWithoutADisplay() {
    const Ran ran = run_without_display({"--version"});
    QCOMPARE(ran.status, QProcess::NormalExit);
    QCOMPARE(ran.exit_code, 0);
    QVERIFY2(QRegularExpression("^simtrain-gui \\d+\\.\\d+\\.\\d+( \\(git [^)]+\\))?\n$").match(ran.out).hasMatch(),
             qPrintable(ran.out + ran.err));
  }

  void aMistypedOptionIsRefusedWithoutADisplay() {
    const Ran ran = run_without_display({"--colour", "tiny-4gpu"});
    QCOMPARE(ran.status, QProcess::NormalExit);
    QCOMPARE(ran.exit_code, 1);
    QCOMPARE(ran.err, QString("simtrain-gui: Unknown option 'colour'.\n"));
  }
};

QTEST_GUILESS_MAIN(CommandLineTest)
#include "test_command_line.moc"
