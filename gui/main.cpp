// simtrain-gui [scenario.json | scenario name | trace.json] [--compare ...] [--help] [--version]
//              [--search results.json] [--screenshot window.png] [--export timeline.png|svg]
// With --screenshot or --export it runs what it was given, writes the file
// and quits (documentation, headless checks with QT_QPA_PLATFORM=offscreen).
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>

#include "main_window.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  QCommandLineParser parser;
  parser.setApplicationDescription("Edit, simulate and compare LLM training steps; see the pipeline bubbles.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("file", "a scenario (file or built-in name) to simulate, or a Chrome trace to show");
  const QCommandLineOption compare("compare", "a second scenario or trace, shown below the first", "file");
  const QCommandLineOption screenshot("screenshot", "write a PNG of the window once everything ran, then quit", "png");
  const QCommandLineOption export_timeline("export", "export the timelines (PNG or SVG) once everything ran, then quit",
                                           "file");
  const QCommandLineOption search("search", "a search's results (simtrain search --json) in the Search view", "json");
  parser.addOptions({compare, search, screenshot, export_timeline});
  {
    // Read without a display: QApplication aborts where it cannot open one,
    // and --help or a mistyped option needs none (process() prints and exits).
    QCoreApplication command_line(argc, argv);
    QCoreApplication::setApplicationName("simtrain-gui");
    // "0.1.0 (git ce5a6dc)": version_text() is "simtrain 0.1.0 (git ce5a6dc)".
    QCoreApplication::setApplicationVersion(QString::fromStdString(simtrain::version_text()).section(' ', 1));
    parser.process(command_line);
  }

  for (const QCommandLineOption& output : {screenshot, export_timeline})
    if (parser.isSet(output) && QFileInfo::exists(parser.value(output))) {
      std::fprintf(stderr, "simtrain-gui: %s exists; not replacing it\n", qPrintable(parser.value(output)));
      return 2;
    }

  QApplication app(argc, argv);
  QApplication::setApplicationName("simtrain-gui");
  const bool batch = parser.isSet(screenshot) || parser.isSet(export_timeline);
  simtrain::gui::MainWindow window;
  window.set_interactive(!batch);
  window.show();
  if (!parser.positionalArguments().isEmpty()) window.open(parser.positionalArguments().front(), 0);
  if (parser.isSet(compare)) window.open(parser.value(compare), 1);
  if (parser.isSet(search)) window.open_search_results(parser.value(search));
  if (batch) {
    QObject::connect(&window, &simtrain::gui::MainWindow::idle, &app, [&] {
      QApplication::processEvents();  // lay out what the last run showed
      bool written = true;
      if (parser.isSet(screenshot)) written = window.grab().save(parser.value(screenshot)) && written;
      if (parser.isSet(export_timeline)) written = window.export_timeline_to(parser.value(export_timeline)) && written;
      QApplication::exit(written && !window.had_problems() ? 0 : 1);
    });
    if (!window.busy()) QTimer::singleShot(0, &window, &simtrain::gui::MainWindow::idle);
  }
  return QApplication::exec();
}
