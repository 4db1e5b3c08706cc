// simtrain-gui reads its command line before it opens a window: --help
// prints the usage and exits 0, and a mistyped option is refused (exit 1),
// both without a display to reach (where QApplication would abort).
#include <QProcess>
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
    for (const char* option : {"--compare <file>", "--search <json>", "--screenshot <png>", "--export <file>"})
      QVERIFY2(ran.out.contains(option), option);
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
