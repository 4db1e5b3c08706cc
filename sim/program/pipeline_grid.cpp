#include "sim/program/pipeline_grid.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>

namespace simtrain {

namespace {

using ActionLists = std::vector<std::vector<PipelineAction>>;
using Row = std::vector<std::string>;  // one cell per pipeline rank

// A pass of one micro-batch on one model stage.
using PassKey = std::tuple<TaskKind, int, int>;  // kind, stage, micro-batch

// PyTorch's layout: "Step NN: " labels, columns as wide as their widest
// cell or header, cells left-aligned; `last_row_note` follows the last row.
std::string format_rows(size_t ranks, const std::vector<Row>& rows, const std::string& last_row_note = "") {
  const size_t digits = std::to_string(rows.empty() ? 0 : rows.size() - 1).size();
  std::vector<std::string> headers;
  std::vector<size_t> widths;
  for (size_t rank = 0; rank < ranks; ++rank) {
    headers.push_back("pp" + std::to_string(rank));
    widths.push_back(headers.back().size());
    for (const Row& row : rows) widths.back() = std::max(widths.back(), row[rank].size());
  }
  auto line = [&](std::string text, const Row& cells) {
    for (size_t rank = 0; rank < ranks; ++rank)
      text += (rank ? " " : "") + cells[rank] + std::string(widths[rank] - cells[rank].size(), ' ');
    return text.erase(text.find_last_not_of(' ') + 1);
  };
  std::string grid = line(std::string(digits + 7, ' '), headers) + "\n";  // under "Step NN: "
  for (size_t step = 0; step < rows.size(); ++step) {
    const std::string number = std::to_string(step);
    grid += line("Step " + std::string(digits - number.size(), '0') + number + ": ", rows[step]);
    grid += (step + 1 == rows.size() ? last_row_note : "") + "\n";
  }
  return grid;
}

class StepPlacer {
public:
  StepPlacer(const PipelineStages& stages, const ActionLists& ranks)
      : ranks_(ranks), p_(static_cast<int>(ranks.size())), stages_(stages) {}

  // The rows, step by step; throws once no rank can start its next action.
  std::vector<Row> place() {
    std::vector<Row> rows;
    std::vector<size_t> next(p_, 0);
    while (!all_placed(next)) {
      Row row(p_);
      std::vector<PassKey> finished;  // inputs only for later steps
      for (int rank = 0; rank < p_; ++rank) {
        if (next[rank] == ranks_[rank].size() || !ready(ranks_[rank][next[rank]], rank)) continue;
        const PipelineAction& action = ranks_[rank][next[rank]++];
        row[rank] = to_string(action);
        finished.push_back(pass_key(action, rank));
      }
      if (finished.empty()) throw std::invalid_argument(stalled(rows, next));
      for (const PassKey& key : finished) done_.insert(key);
      rows.push_back(std::move(row));
    }
    return rows;
  }

private:
  PassKey pass_key(const PipelineAction& a, int rank) const { return {a.kind, stages_.of(a.chunk, rank), a.microbatch}; }

  bool ready(const PipelineAction& a, int rank) const {
    const int stage = stages_.of(a.chunk, rank), before = stages_.before(stage), after = stages_.after(stage);
    auto done = [&](TaskKind kind, int of_stage) { return done_.count({kind, of_stage, a.microbatch}) > 0; };
    switch (a.kind) {
      case TaskKind::F: return before < 0 || done(TaskKind::F, before);
      case TaskKind::B: return done(TaskKind::F, stage) && (after < 0 || done(TaskKind::B, after));
      case TaskKind::W: return done(TaskKind::B, stage);
      default: return true;  // schedules hold F, B and W alone
    }
  }

  bool all_placed(const std::vector<size_t>& next) const {
    for (int rank = 0; rank < p_; ++rank)
      if (next[rank] < ranks_[rank].size()) return false;
    return true;
  }

  // The message for a schedule that cannot go on: the grid so far, then the
  // actions every rank waits to start.
  std::string stalled(std::vector<Row> rows, const std::vector<size_t>& next) const {
    Row waiting(p_);
    for (int rank = 0; rank < p_; ++rank)
      if (next[rank] < ranks_[rank].size()) waiting[rank] = "(" + to_string(ranks_[rank][next[rank]]) + ")";
    rows.push_back(std::move(waiting));
    return "pipeline schedule deadlocks: at step " + std::to_string(rows.size() - 1) +
           " no rank can start its next action (in parentheses), as each waits for an input not yet produced:\n" +
           format_rows(p_, rows, "  <-- next actions, none can start");
  }

  const ActionLists& ranks_;
  const int p_;
  const PipelineStages stages_;
  std::set<PassKey> done_;
};

}  // namespace

std::string format_pipeline_grid(const PipelineStages& stages, const std::vector<std::vector<PipelineAction>>& ranks) {
  return format_rows(ranks.size(), StepPlacer(stages, ranks).place());
}

}  // namespace simtrain
