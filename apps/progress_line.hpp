#pragma once
// The progress line of a command that works for more than a moment
// (simulate, train, search): on standard error, rewritten in place, cleared
// when the command ends, done, failed or interrupted. Shown only where
// standard error is a terminal and --quiet was not given. Its texts come from
// the pure functions below.
#include <chrono>
#include <ostream>
#include <string>

#include "sim/engine/replay_options.hpp"
#include "sim/longrun/train.hpp"
#include "sim/search/search.hpp"

namespace simtrain {

// ", about 1m30s left, 12 s elapsed": once part of the work is done
// (0 < fraction_done < 1), the rest at the pace of that part, which took
// `pace_seconds`; and the wall time so far.
std::string left_and_elapsed(double elapsed_seconds, double fraction_done, double pace_seconds);

// A simulation's stage (ReplayOptions::on_phase): "simulating: building the Program".
std::string phase_text(const std::string& phase);
// A replay under way, `replay_seconds` after its tasks began to run, named
// by progress.replay ("simulating" for the step's own):
// "simulating: 1,234/5,678 tasks, about 30 s left, 12 s elapsed, 0.41 s simulated".
std::string replay_progress_text(const ReplayProgress& progress, double elapsed_seconds, double replay_seconds);
// `train`'s runs, `runs_seconds` after they began:
// "training: 3/10 runs done, about 16 s left, 12 s elapsed, run 4 at 12.3 simulated days".
std::string train_progress_text(const TrainProgress& progress, double elapsed_seconds, double runs_seconds);
// A command writing a Program rank by rank, `writing_seconds` after it began:
// "schedule: 1,024/3,072 ranks written, about 3 s left, 2 s elapsed".
std::string ranks_written_text(const std::string& command, int ranks_written, int ranks, double elapsed_seconds,
                               double writing_seconds);
// "search [#######.............] 120/340 simulated, at most 1m13s left, 40 s elapsed, 2,876 pruned"
// (the configurations left are an upper bound: pruning drops some).
std::string search_progress_text(const SearchProgress& progress, double elapsed_seconds);

// `text` in `columns` characters: its last ", "-separated parts left out
// until it fits (what matters most comes first), else cut.
std::string fit_to_width(std::string text, size_t columns);

// Whether a command shows progress: standard error is a terminal and --quiet was not given.
bool progress_wanted(bool quiet);

class ProgressLine {
public:
  // Shows nothing unless `wanted` (progress_wanted).
  ProgressLine(std::ostream& err, bool wanted);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }

  bool wanted() const { return wanted_; }
  double elapsed_seconds() const;  // since the line was made
  // Replaces the line with `text`, fitted to the terminal's width (a wrapped line cannot be rewritten).
  void show(const std::string& text);
  void clear();

private:
  std::ostream& err_;
  bool wanted_;
  size_t columns_;
  std::chrono::steady_clock::time_point start_;
  size_t width_ = 0;  // of the text shown; 0: none
};

// Sets options.on_phase and options.on_progress to show a simulation's stages
// and its replays' progress on `line`, which must outlive them; nothing where
// the line is not wanted.
void show_simulation_progress(ReplayOptions& options, ProgressLine& line);

}  // namespace simtrain
