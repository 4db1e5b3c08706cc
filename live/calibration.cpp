#include "calibration.hpp"

#include <map>
#include <tuple>

#include "profile_document.hpp"
#include "sim/base/input_error.hpp"
#include "timing.hpp"

namespace simtrain {

ProfileDatabase calibration_database(const RecordedStep& live) {
  const std::string source = live.source.empty() ? "the trace" : live.source;
  if (!live.timeline.live)
    throw InputError(source, "",
                     "is a simulated trace: nothing was measured (calibration needs the trace of a live run, "
                     "whose otherData.source is \"live\")");
  const LiveRecord& record = *live.timeline.live;
  const Program& program = live.program;

  // (op name, shape, dtype) -> the op as first seen and its samples, in first-seen order.
  using Key = std::tuple<std::string, std::vector<int64_t>, Dtype>;
  std::map<Key, size_t> index;
  std::vector<std::pair<Op, std::vector<double>>> ops;
  for (const Task& t : program.tasks) {
    if (!is_compute(t.kind) || t.work < 0 || static_cast<size_t>(t.id) >= record.op_seconds.size()) continue;
    const std::vector<double>& seconds = record.op_seconds[t.id];
    const std::vector<Op>& work_ops = program.works[t.work].ops;
    for (size_t i = 0; i < seconds.size() && i < work_ops.size(); ++i) {
      const Op& op = work_ops[i];
      auto [it, inserted] = index.try_emplace(Key{op.name, op.shape, record.dtype}, ops.size());
      if (inserted) ops.push_back({op, {}});
      if (seconds[i] > 0) ops[it->second].second.push_back(seconds[i]);  // 0: below the timer's resolution
    }
  }

  ProfileDatabase database;
  database.source = source;
  database.device_name = record.device;
  for (auto& [op, samples] : ops) {
    if (samples.empty()) continue;
    const TimingSummary summary = summarize(std::move(samples));
    ProfileEntry entry;
    entry.op = op;
    entry.dtype = record.dtype;
    entry.kernel = "live run (" + record.device + ")";
    entry.median_seconds = summary.median_seconds;
    entry.p10_seconds = summary.p10_seconds;
    entry.p90_seconds = summary.p90_seconds;
    entry.repetitions = summary.repetitions;
    database.entries.push_back(std::move(entry));
  }
  if (database.entries.empty())
    throw InputError(source, "", "is a live trace without a single timed op (no compute task lists \"ops\")");
  return database;
}

nlohmann::json calibration_document(const ProfileDatabase& database, const std::string& command_line) {
  ProfileOptions options;
  options.command_line = command_line;
  nlohmann::json document =
      profile_document({}, options, {{"name", database.device_name}}, database.entries, nlohmann::json::array());
  document.erase("scenarios");  // a trace does not name its scenario
  document["method"] = {
      {"trace", database.source},
      {"timer", "each op of each compute task, timed within the live step on " + database.device_name},
      {"repetitions", "the samples: every compute task of the step that ran the op (0 s samples left out)"},
      {"statistics", "median, 10th and 90th percentiles of the samples"}};
  return document;
}

}  // namespace simtrain
