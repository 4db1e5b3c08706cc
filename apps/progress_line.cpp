#include "progress_line.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <memory>

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

constexpr double kSecondsPerDay = 86400;

// Columns of the terminal on standard error; 80 where it does not say.
size_t terminal_columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string left_and_elapsed(double elapsed_seconds, double fraction_done, double pace_seconds) {
  std::string text;
  if (fraction_done > 0 && fraction_done < 1)
    text += ", about " + wall_clock_text(pace_seconds * (1 - fraction_done) / fraction_done) + " left";
  return text + ", " + wall_clock_text(elapsed_seconds) + " elapsed";
}

std::string phase_text(const std::string& phase) { return "simulating: " + phase; }

std::string replay_progress_text(const ReplayProgress& progress, double elapsed_seconds, double replay_seconds) {
  const double fraction =
      progress.tasks_total ? static_cast<double>(progress.tasks_done) / static_cast<double>(progress.tasks_total) : 0;
  return (progress.replay.empty() ? std::string("simulating") : progress.replay) + ": " +
         with_commas(static_cast<double>(progress.tasks_done)) + "/" +
         with_commas(static_cast<double>(progress.tasks_total)) + " tasks" +
         left_and_elapsed(elapsed_seconds, fraction, replay_seconds) +
         format(", %.3g s simulated", progress.simulated_seconds);
}

std::string train_progress_text(const TrainProgress& progress, double elapsed_seconds, double runs_seconds) {
  const double fraction = progress.runs ? static_cast<double>(progress.runs_done) / progress.runs : 0;
  return "training: " + std::to_string(progress.runs_done) + "/" + std::to_string(progress.runs) + " runs done" +
         left_and_elapsed(elapsed_seconds, fraction, runs_seconds) + ", run " + std::to_string(progress.runs_done + 1) +
         " at " + format("%.1f simulated days", progress.simulated_seconds / kSecondsPerDay);
}

std::string ranks_written_text(const std::string& command, int ranks_written, int ranks, double elapsed_seconds,
                               double writing_seconds) {
  const double fraction = ranks ? static_cast<double>(ranks_written) / ranks : 0;
  return command + ": " + with_commas(ranks_written) + "/" + with_commas(ranks) + " ranks written" +
         left_and_elapsed(elapsed_seconds, fraction, writing_seconds);
}

std::string search_progress_text(const SearchProgress& progress, double elapsed_seconds) {
  constexpr int kBar = 20;
  const long long total = progress.simulated + progress.remaining;
  const int filled = total ? static_cast<int>(kBar * progress.simulated / total) : 0;
  std::string text = "search [" + std::string(filled, '#') + std::string(kBar - filled, '.') + "] " +
                     with_commas(static_cast<double>(progress.simulated)) + "/" +
                     with_commas(static_cast<double>(total)) + " simulated";
  if (progress.simulated > 0 && progress.remaining > 0)
    text += ", at most " + wall_clock_text(elapsed_seconds / progress.simulated * progress.remaining) + " left";
  return text + ", " + wall_clock_text(elapsed_seconds) + " elapsed, " +
         with_commas(static_cast<double>(progress.pruned)) + " pruned";
}

std::string fit_to_width(std::string text, size_t columns) {
  while (text.size() > columns) {
    const size_t last_part = text.rfind(", ");
    if (last_part == std::string::npos) return text.substr(0, columns);
    text.resize(last_part);
  }
  return text;
}

bool progress_wanted(bool quiet) { return !quiet && ::isatty(STDERR_FILENO); }

ProgressLine::ProgressLine(std::ostream& err, bool wanted)
    : err_(err), wanted_(wanted), columns_(wanted ? terminal_columns() : 80), start_(std::chrono::steady_clock::now()) {}

double ProgressLine::elapsed_seconds() const { return seconds_since(start_); }

void ProgressLine::show(const std::string& text) {
  if (!wanted_) return;
  const std::string shown = fit_to_width(text, columns_ - 1);  // the cursor's column stays on the line
  err_ << "\r" << shown << std::string(width_ > shown.size() ? width_ - shown.size() : 0, ' ') << std::flush;
  width_ = shown.size();
}

void ProgressLine::clear() {
  if (width_ == 0) return;
  err_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
  width_ = 0;
}

void show_simulation_progress(ReplayOptions& options, ProgressLine& line) {
  if (!line.wanted()) return;
  // The ETA's pace: the time since the replay's tasks began to run (its last phase, "replaying the step").
  auto phase_start = std::make_shared<std::chrono::steady_clock::time_point>();
  options.on_phase = [&line, phase_start](const std::string& phase) {
    *phase_start = std::chrono::steady_clock::now();
    line.show(phase_text(phase));
  };
  options.on_progress = [&line, phase_start](const ReplayProgress& progress) {
    line.show(replay_progress_text(progress, line.elapsed_seconds(), seconds_since(*phase_start)));
  };
}

}  // namespace simtrain
