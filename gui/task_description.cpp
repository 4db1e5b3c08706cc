#include "task_description.hpp"

#include <map>

#include "sim/model/cost_model.hpp"
#include "text_format.hpp"
#include "timeline_model.hpp"

namespace simtrain::gui {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape) text += (text.empty() ? "" : "×") + std::to_string(d);
  return "[" + text + "]";
}

// "4× qkv gemm [2048×3072×1024]" per distinct op, at most `lines` of them.
std::string ops_text(const Work& work, size_t lines) {
  std::vector<std::pair<std::string, int>> counted;  // in first-seen order
  std::map<std::string, size_t> index;
  for (const Op& op : work.ops) {
    const std::string key = op.name + " " + to_string(op.op_class) + " " + shape_text(op.shape);
    auto [it, fresh] = index.try_emplace(key, counted.size());
    if (fresh) counted.push_back({key, 0});
    ++counted[it->second].second;
  }
  std::string text;
  for (size_t i = 0; i < counted.size() && i < lines; ++i)
    text += "\n  " + std::to_string(counted[i].second) + "× " + counted[i].first;
  if (counted.size() > lines) text += "\n  … " + std::to_string(counted.size() - lines) + " more kinds of op";
  return text;
}

// The cost model's sources for the ops of a work: "roofline (all 40 ops)" or "measured 12, roofline 28".
std::string time_source_text(const CostModel& cost_model, Dtype dtype, const Work& work) {
  std::map<std::string, int> counts;
  for (const Op& op : work.ops) ++counts[to_string(cost_model.op_time(op, dtype).source)];
  if (counts.size() == 1) return counts.begin()->first + " (all " + std::to_string(work.ops.size()) + " ops)";
  std::string text;
  for (const auto& [source, count] : counts) text += (text.empty() ? "" : ", ") + source + " " + std::to_string(count);
  return text;
}

// "rank 3 (tp 1, pp 1, dp 0)"
std::string rank_text(const Program& p, int rank) {
  const RankCoord& c = p.coords[rank];
  return "rank " + std::to_string(rank) + " (tp " + std::to_string(c.tp) + ", pp " + std::to_string(c.pp) + ", dp " +
         std::to_string(c.dp) + ")";
}

}  // namespace

std::string describe_task(const StepResult& step, int id) {
  const Program& p = step.program;
  const Task& t = p.tasks[id];
  const TaskTiming& timing = step.timeline.tasks[id];
  std::string text = task_name(p, t) + "\n" + to_label(box_kind(t)) + " (" + to_string(t.kind) + ") on the " +
                     to_string(t.stream) + " stream of " + rank_text(p, t.rank);
  text += "\nstart " + format_duration(timing.start) + ", duration " + format_duration(timing.end - timing.start);
  if (t.work >= 0) {
    const Work& work = p.works[t.work];
    text += "\nops (" + work.name + ", " + std::to_string(work.ops.size()) + " in all):" + ops_text(work, 6);
    if (step.scenario)
      text += "\ntime from: " + time_source_text(*step.cost_model, step.scenario->training.dtype, work);
  } else if (t.dim != CommDim::none) {
    text += "\n" + (t.count > 1 ? std::to_string(t.count) + " × " : std::string()) + format_bytes(t.bytes);
    if (t.group >= 0) text += " on group " + p.groups[t.group].name;
    if (t.peer >= 0) text += (t.kind == TaskKind::SEND ? " to rank " : " from rank ") + std::to_string(t.peer);
    if (step.scenario) text += "\ntime from: network simulation (SimGrid flows or closed form)";
  }
  if (!step.scenario) text += "\ntime from: trace " + step.title;
  return text;
}

std::string describe_host_launch(const StepResult& step, const HostSlice& slice) {
  const Program& p = step.program;
  const Task& t = p.tasks[slice.task];
  const TaskTiming& timing = step.timeline.tasks[slice.task];
  std::string text = "launch " + task_name(p, t) + "\nthe host of " + rank_text(p, t.rank) + " launching " +
                     to_label(box_kind(t)) + " (" + to_string(t.kind) + ") for its " + to_string(t.stream) + " stream";
  text += "\nstart " + format_duration(slice.start_seconds) + ", until its next launch " +
          format_duration(slice.end_seconds - slice.start_seconds);
  if (timing.ran())
    text += "\nthe task ran from " + format_duration(timing.start) + " to " + format_duration(timing.end);
  const std::vector<int>& host_of_rank = step.timeline.host_of_rank;
  if (!host_of_rank.empty() && host_of_rank[t.rank] != t.rank)
    text += "\nsimulated as rank " + std::to_string(host_of_rank[t.rank]) +
            "'s host (the replay runs one host per TP group and per class of alike replicas)";
  return text;
}

}  // namespace simtrain::gui
