#include "sim/step/report.hpp"

#include <algorithm>

#include "sim/base/text_format.hpp"
#include "sim/model/gemm_model.hpp"
#include "sim/step/scenario_summary.hpp"

namespace simtrain {

namespace {

using ordered_json = nlohmann::ordered_json;

constexpr double GiB = 1024.0 * 1024 * 1024;

// Whether the report gives a dimension's figures: TP, PP and DP always, EP and CP where the job has them.
bool reported(CommDim dim, const ReportedDims& dims) {
  if (dim == CommDim::ep) return dims.ep;
  if (dim == CommDim::cp) return dims.cp;
  return true;
}

ReportedDims reported_dims(const Program& program) {
  ReportedDims dims;
  for (const Group& g : program.groups) {
    if (g.ranks.size() < 2) continue;
    dims.ep = dims.ep || g.dim == CommDim::ep;
    dims.cp = dims.cp || g.dim == CommDim::cp;
  }
  return dims;
}

// Every figure of a TimeSplit, with its JSON key and the dimension it
// belongs to (none: compute and idle): one list for means and output alike.
struct TimeSplitField {
  const char* json_key;
  double TimeSplit::*seconds;
  CommDim dim;
};
constexpr TimeSplitField time_split_fields[] = {
    {"compute_s", &TimeSplit::compute_seconds, CommDim::none},
    {"exposed_tp_s", &TimeSplit::exposed_tp_seconds, CommDim::tp},
    {"exposed_ep_s", &TimeSplit::exposed_ep_seconds, CommDim::ep},
    {"exposed_cp_s", &TimeSplit::exposed_cp_seconds, CommDim::cp},
    {"exposed_pp_s", &TimeSplit::exposed_pp_seconds, CommDim::pp},
    {"exposed_dp_s", &TimeSplit::exposed_dp_seconds, CommDim::dp},
    {"idle_s", &TimeSplit::idle_seconds, CommDim::none},
    {"tp_s", &TimeSplit::tp_seconds, CommDim::tp},
    {"ep_s", &TimeSplit::ep_seconds, CommDim::ep},
    {"cp_s", &TimeSplit::cp_seconds, CommDim::cp},
    {"pp_s", &TimeSplit::pp_seconds, CommDim::pp},
    {"dp_s", &TimeSplit::dp_seconds, CommDim::dp}};

// The communicating dimensions in the report's order (that of TimeSplit's priority).
struct DimensionFigures {
  CommDim dim;
  const char* label;     // text
  const char* json_key;  // CommRatios in JSON
  double TimeSplit::*exposed_seconds;
  double TimeSplit::*seconds;  // hidden or not
  double CommRatios::*ratio;
};
constexpr DimensionFigures dimension_figures[] = {
    {CommDim::tp, "TP", "tp", &TimeSplit::exposed_tp_seconds, &TimeSplit::tp_seconds, &CommRatios::tp},
    {CommDim::ep, "EP", "ep", &TimeSplit::exposed_ep_seconds, &TimeSplit::ep_seconds, &CommRatios::ep},
    {CommDim::cp, "CP", "cp", &TimeSplit::exposed_cp_seconds, &TimeSplit::cp_seconds, &CommRatios::cp},
    {CommDim::pp, "PP", "pp", &TimeSplit::exposed_pp_seconds, &TimeSplit::pp_seconds, &CommRatios::pp},
    {CommDim::dp, "DP", "dp", &TimeSplit::exposed_dp_seconds, &TimeSplit::dp_seconds, &CommRatios::dp}};

TimeSplit mean_split(const std::vector<StageFigures>& stages) {
  TimeSplit mean;
  for (const StageFigures& stage : stages)
    for (const TimeSplitField& field : time_split_fields)
      mean.*field.seconds += stage.time.*field.seconds / static_cast<double>(stages.size());
  return mean;
}

// Priority of what occupies an instant: compute, then TP, EP, CP (each
// blocks its layer), PP, DP communication; idle after the last level.
constexpr int activity_levels = 6;
int activity_level(const Task& task) {
  if (is_compute(task.kind)) return 0;
  switch (task.dim) {
    case CommDim::tp: return 1;
    case CommDim::ep: return 2;
    case CommDim::cp: return 3;
    case CommDim::pp: return 4;
    default: return 5;
  }
}

// By work, how many tasks run it: each stored list's count once for every
// rank reading it (a translated task runs its source's work).
std::vector<long long> work_uses(const Program& program) {
  std::vector<long long> readers(program.rank_lists(), 0);
  for (int rank = 0; rank < program.rank_lists(); ++rank) ++readers[program.tasks.source_rank(rank)];
  std::vector<long long> uses(program.works.size(), 0);
  for (int rank = 0; rank < program.rank_lists(); ++rank)
    if (readers[rank] > 0)
      for (int id : program.rank_tasks(rank))
        if (const int work = program.tasks[id].work; work >= 0) uses[work] += readers[rank];
  return uses;
}

// Whether two ranks reading one stored list ran each task at the same times
// (a replay's TP ranks of one lane do): their time splits are then equal.
bool same_times(const Program& program, const Timeline& timeline, int rank, int other) {
  if (program.tasks.source_rank(rank) != program.tasks.source_rank(other)) return false;
  const RankTaskIds mine = program.rank_tasks(rank), others = program.rank_tasks(other);
  for (size_t i = 0; i < mine.size(); ++i) {
    const TaskTiming &a = timeline.tasks[mine[i]], &b = timeline.tasks[others[i]];
    if (a.start != b.start || a.end != b.end) return false;
  }
  return true;
}

// Splits every rank's time, and the communication/compute ratios over them.
void add_comm_ratios(StepReport& r, const Program& program, const Timeline& timeline) {
  const double n = program.world_size;
  // A rank whose replica a symmetry-reduced replay let another stand for has that one's times.
  const std::vector<int>& representative = timeline.representative_of_rank;
  auto stands_for_itself = [&](int rank) { return representative.empty() || representative[rank] == rank; };
  r.ranks.resize(program.world_size);
  int previous = -1;  // the last rank split
  for (int rank = 0; rank < program.world_size; ++rank) {
    if (!stands_for_itself(rank)) continue;
    r.ranks[rank] = previous >= 0 && same_times(program, timeline, rank, previous)
                        ? r.ranks[previous]
                        : split_rank_time(program, timeline, rank, r.step_seconds);
    previous = rank;
  }
  for (int rank = 0; rank < program.world_size; ++rank) {
    if (!stands_for_itself(rank)) r.ranks[rank] = r.ranks[representative[rank]];
    const TimeSplit& t = r.ranks[rank];
    if (t.compute_seconds <= 0) continue;
    const double c = t.compute_seconds;
    for (const DimensionFigures& d : dimension_figures) {
      r.comm_over_compute.*d.ratio += t.*d.seconds / c / n;
      r.exposed_over_compute.*d.ratio += t.*d.exposed_seconds / c / n;
    }
    const double exposed = t.exposed_seconds() / c;
    if (exposed > exposed_comm_warning_fraction) ++r.ranks_over_warning;
    if (exposed > r.most_exposed_over_compute) r.most_exposed_over_compute = exposed, r.most_exposed_rank = rank;
  }
}

}  // namespace

TimeSplit split_rank_time(const Program& program, const Timeline& timeline, int rank, double step_seconds) {
  struct Edge {
    double time;
    int level;
    int delta;
  };
  std::vector<Edge> edges;
  // A task's level (its kind and dimension) is that of its stored original,
  // read untranslated from the list the rank reads.
  const RankTaskIds ids = program.rank_tasks(rank), stored = program.rank_tasks(program.tasks.source_rank(rank));
  for (size_t i = 0; i < ids.size(); ++i) {
    const TaskTiming& t = timeline.tasks[ids[i]];
    if (t.end <= t.start) continue;
    const int level = activity_level(program.tasks[stored[i]]);
    edges.push_back({t.start, level, +1});
    edges.push_back({t.end, level, -1});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.time < b.time; });
  int active[activity_levels] = {};
  double seconds[activity_levels + 1] = {};  // by level, then idle
  double busy[activity_levels] = {};
  double now = 0;
  for (const Edge& e : edges) {
    int level = 0;
    while (level < activity_levels && active[level] == 0) ++level;
    seconds[level] += e.time - now;
    for (int l = 1; l < activity_levels; ++l)
      if (active[l] > 0) busy[l] += e.time - now;
    now = e.time;
    active[e.level] += e.delta;
  }
  seconds[activity_levels] += step_seconds - now;
  return {.compute_seconds = seconds[0],
          .exposed_tp_seconds = seconds[1],
          .exposed_ep_seconds = seconds[2],
          .exposed_cp_seconds = seconds[3],
          .exposed_pp_seconds = seconds[4],
          .exposed_dp_seconds = seconds[5],
          .idle_seconds = seconds[6],
          .tp_seconds = busy[1],
          .ep_seconds = busy[2],
          .cp_seconds = busy[3],
          .pp_seconds = busy[4],
          .dp_seconds = busy[5]};
}

StepReport timing_report(const Program& program, const Timeline& timeline) {
  StepReport r;
  r.step_seconds = timeline.step_seconds;
  r.dims = reported_dims(program);
  for (int pp = 0; pp < program.pipeline_size; ++pp) {
    StageFigures stage;
    stage.pipeline_rank = pp;
    for (int rank = 0; rank < program.world_size; ++rank)
      if (program.coords[rank].pp == pp && program.coords[rank].tp == 0 && program.coords[rank].dp == 0) stage.rank = rank;
    stage.time = split_rank_time(program, timeline, stage.rank, r.step_seconds);
    r.stages.push_back(stage);
  }
  r.mean_split = mean_split(r.stages);
  r.bubble_fraction = r.mean_split.idle_seconds / r.step_seconds;
  r.bubble_over_compute = r.mean_split.idle_seconds / r.mean_split.compute_seconds;
  r.tasks = static_cast<long long>(program.tasks.size());
  add_comm_ratios(r, program, timeline);
  r.busiest_links = timeline.busiest_links;
  return r;
}

StepReport make_report(const Scenario& s, const Workload& w, const Program& program, const Timeline& timeline,
                       const CostModel& cost_model, double wall_seconds) {
  StepReport r = timing_report(program, timeline);
  r.scenario_name = s.name;
  r.scenario_summary_lines = scenario_summary_lines(s, w);
  r.scenario_summary = scenario_summary_json(s, w);
  r.configuration = s.document;
  add_replay_figures(r, program, timeline);
  const double gpus = program.world_size;
  const double peak = peak_flops(s.cluster.gpu, s.training.dtype);
  r.tokens_per_second = w.tokens_per_step / r.step_seconds;
  r.model_tflops_per_gpu = w.model_flops_per_step / r.step_seconds / gpus / 1e12;
  r.hardware_tflops_per_gpu = w.hardware_flops_per_step / r.step_seconds / gpus / 1e12;
  r.mfu = w.model_flops_per_step / (r.step_seconds * gpus * peak);
  r.gpu_memory_bytes = s.cluster.gpu.memory_bytes;
  r.step_time_band = step_time_band_of(s);
  r.gpu = s.cluster.gpu;

  for (StageFigures& stage : r.stages) {
    stage.memory = memory_for_rank(s, w, program, stage.rank);
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, stage.memory.total_bytes());
  }
  r.out_of_memory = r.peak_memory_bytes > r.gpu_memory_bytes;

  const std::vector<long long> uses = work_uses(program);
  for (size_t i = 0; i < program.works.size(); ++i)
    for (const Op& op : program.works[i].ops)
      r.time_sources[to_string(op.op_class)][to_string(cost_model.op_time(op, s.training.dtype).source)] += uses[i];
  r.wall_seconds = wall_seconds;
  return r;
}

void add_replay_figures(StepReport& r, const Program& program, const Timeline& timeline) {
  r.stopped = timeline.stopped;
  r.stop_reason = timeline.stop_reason;
  r.simulated_tasks = static_cast<long long>(timeline.simulated_tasks);
  r.data_parallel_replicas = program.world_size / (program.tensor_size * program.pipeline_size);
  r.simulated_replicas = r.data_parallel_replicas;
  if (!timeline.representative_of_rank.empty()) {
    const auto representatives = std::count_if(timeline.representative_of_rank.begin(), timeline.representative_of_rank.end(),
                                               [r = 0](int rep) mutable { return rep == r++; });
    r.simulated_replicas = static_cast<int>(representatives) / (program.tensor_size * program.pipeline_size);
  }
  r.approximate_after_rounds = timeline.approximate_after_rounds;
  r.flows = static_cast<long long>(timeline.flows);
  r.closed_form_collectives = static_cast<long long>(timeline.closed_form_collectives);
  if (!timeline.host_wait_seconds.empty() && !r.stages.empty()) {
    double sum = 0;
    for (StageFigures& stage : r.stages) sum += stage.host_wait_seconds = timeline.host_wait_seconds[stage.rank];
    r.host_wait_seconds = sum / r.stages.size();
  }
}

namespace {

ordered_json to_json(const TimeSplit& t, const ReportedDims& dims) {
  ordered_json figures;
  for (const TimeSplitField& field : time_split_fields)
    if (reported(field.dim, dims)) figures[field.json_key] = t.*field.seconds;
  return figures;
}

ordered_json to_json(const CommRatios& c, const ReportedDims& dims) {
  ordered_json ratios;
  for (const DimensionFigures& d : dimension_figures)
    if (reported(d.dim, dims)) ratios[d.json_key] = c.*d.ratio;
  return ratios;
}

ordered_json communication_json(const StepReport& r) {
  ordered_json ranks = ordered_json::array();
  for (const TimeSplit& t : r.ranks) ranks.push_back(to_json(t, r.dims));
  ordered_json links = ordered_json::array();
  for (const LinkLoad& l : r.busiest_links)
    links.push_back({{"link", l.link},
                     {"bytes", l.bytes},
                     {"bandwidth_Bps", l.bytes_per_second},
                     {"utilisation", l.bytes / (l.bytes_per_second * r.step_seconds)}});
  return {{"comm_over_compute", to_json(r.comm_over_compute, r.dims)},
          {"exposed_over_compute", to_json(r.exposed_over_compute, r.dims)},
          {"most_exposed_rank", r.most_exposed_rank},
          {"most_exposed_over_compute", r.most_exposed_over_compute},
          {"ranks_over_warning", r.ranks_over_warning},
          {"warning_fraction", exposed_comm_warning_fraction},
          {"definition", "per rank: communication time of a dimension (its tasks' union, hidden or not) or its "
                         "exposed time, over compute time; means over ranks"},
          {"ranks", ranks},
          {"busiest_links", links},
          {"busiest_links_definition", "bytes carried / (bandwidth x step time)"}};
}

ordered_json sensitivity_json(const StepReport& r) {
  if (!r.sensitivity) return nullptr;
  const Sensitivity& s = *r.sensitivity;
  if (!s.computed) return {{"computed", false}};
  return {{"computed", true},
          {"compute_10pct_slower_step_s", s.compute_slower_seconds},
          {"network_2x_slower_step_s", s.network_slower_seconds},
          {"definition", "the step with every compute task 10 % longer, and with every link at half its bandwidth"}};
}

ordered_json to_json(const MemoryBreakdown& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"gradients_bytes", m.gradients_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"activations_bytes", m.activations_bytes},
          {"reserve_bytes", m.reserve_bytes},
          {"total_bytes", m.total_bytes()},
          {"peak_in_flight_microbatches", m.peak_in_flight_microbatches}};
}

// Where the GPU's figures come from (sim/scenario/gpu_spec.hpp).
ordered_json gpu_figures_json(const GpuSpec& gpu) {
  return {{"gpu", gpu.name}, {"provenance", to_string(gpu.compute_provenance)}, {"source", gpu.compute_source}};
}

// A figure, or null where what it needs is unknown.
ordered_json known_if(bool known, double value) { return known ? ordered_json(value) : ordered_json(nullptr); }

}  // namespace

const StageFigures& peak_memory_stage(const StepReport& r) {
  return *std::max_element(r.stages.begin(), r.stages.end(), [](const StageFigures& a, const StageFigures& b) {
    return a.memory.total_bytes() < b.memory.total_bytes();
  });
}

ordered_json to_json(const StepReport& r) {
  ordered_json stages = ordered_json::array();
  for (const StageFigures& st : r.stages)
    stages.push_back({{"pipeline_rank", st.pipeline_rank},
                      {"rank", st.rank},
                      {"time", to_json(st.time, r.dims)},
                      {"bubble_fraction", st.time.idle_seconds / r.step_seconds},
                      {"host_wait_s", r.host_wait_seconds ? ordered_json(st.host_wait_seconds) : ordered_json(nullptr)},
                      {"memory", r.memory_known ? to_json(st.memory) : ordered_json(nullptr)}});
  return {{"scenario", r.scenario_summary},
          {"step_time_s", r.step_seconds},
          {"step_time_band", r.step_time_band ? to_json(*r.step_time_band) : ordered_json(nullptr)},
          {"gpu_figures", r.gpu ? gpu_figures_json(*r.gpu) : ordered_json(nullptr)},
          {"stopped", r.stopped ? ordered_json(r.stop_reason) : ordered_json(false)},
          {"tokens_per_s", known_if(r.workload_known, r.tokens_per_second)},
          {"model_tflops_per_gpu", known_if(r.workload_known, r.model_tflops_per_gpu)},
          {"hardware_tflops_per_gpu", r.hardware_tflops_per_gpu},
          {"mfu", known_if(r.workload_known, r.mfu)},
          {"bubble",
           {{"fraction_of_step", r.bubble_fraction},
            {"over_compute", r.bubble_over_compute},
            {"definition", "idle time of a stage's GPU (no compute, no communication) / step time, mean over "
                           "pipeline stages; over_compute = idle / compute (Megatron-LM's definition)"}}},
          {"host_wait_s", r.host_wait_seconds ? ordered_json(*r.host_wait_seconds) : ordered_json(nullptr)},
          {"mean_time_split", to_json(r.mean_split, r.dims)},
          {"communication", communication_json(r)},
          {"stages", stages},
          {"memory", r.memory_known ? ordered_json{{"gpu_bytes", r.gpu_memory_bytes},
                                                   {"peak_bytes", r.peak_memory_bytes},
                                                   {"out_of_memory", r.out_of_memory}}
                                    : ordered_json(nullptr)},
          {"sensitivity", sensitivity_json(r)},
          {"compute_time_sources", r.time_sources},
          {"simulation",
           {{"tasks", r.tasks},
            {"simulated_tasks", r.simulated_tasks},
            {"data_parallel_replicas", r.data_parallel_replicas},
            {"simulated_replicas", r.simulated_replicas},
            {"replica_classes", r.approximate_after_rounds ? "approximate" : "exact"},
            {"approximate_after_rounds", r.approximate_after_rounds},
            {"flows", r.flows},
            {"closed_form_collectives", r.closed_form_collectives}}},
          {"scenario_document", r.configuration}};
}

namespace {

std::string ms(double seconds) { return format("%.1f ms", seconds * 1e3); }

std::string sensitivity_text(const StepReport& r) {
  const Sensitivity& s = *r.sensitivity;
  if (!s.computed) return "not computed for a Program this large (--sensitivity: two more replays)";
  auto change = [&](double seconds) {
    return format("%.4f s", seconds) + format(" (%+.1f %%)", (seconds / r.step_seconds - 1) * 100);
  };
  return "compute 10 % slower " + change(s.compute_slower_seconds) + ", network 2x slower " +
         change(s.network_slower_seconds);
}

void add_step_figures(std::string& out, const StepReport& r) {
  add_line(out, "step time", format("%.4f s", r.step_seconds));
  if (r.step_time_band) add_line(out, "error band", to_text(*r.step_time_band));
  if (r.gpu)
    add_line(out, "GPU figures", r.gpu->name + ": " + to_string(r.gpu->compute_provenance) + " (" + r.gpu->compute_source +
                                     "), docs/gpus.md");
  if (r.sensitivity) add_line(out, "sensitivity", sensitivity_text(r));
  if (r.workload_known) {
    add_line(out, "throughput", with_commas(r.tokens_per_second) + " tokens/s");
    add_line(out, "achieved", format("%.1f TFLOP/s per GPU", r.model_tflops_per_gpu) +
                                  format(" (%.1f with recompute)", r.hardware_tflops_per_gpu));
    add_line(out, "MFU", format("%.1f %%", r.mfu * 100) + "  (model FLOPs / (step time x GPUs x peak))");
  } else {
    add_line(out, "achieved", format("%.1f TFLOP/s per GPU", r.hardware_tflops_per_gpu) +
                                  " as recorded (throughput and MFU unknown: the traces say nothing of tokens or "
                                  "model FLOPs)");
  }
  add_line(out, "pipeline bubble", format("%.1f %% of the step", r.bubble_fraction * 100) +
                                       format(" (idle / step, mean over stages; idle / compute = %.1f %%)",
                                              r.bubble_over_compute * 100));
  if (r.host_wait_seconds)
    add_line(out, "host-bound", ms(*r.host_wait_seconds) + format(" (%.1f %% of the step)", 100 * *r.host_wait_seconds / r.step_seconds) +
                                    "  (compute stream waiting for its host to launch kernels, mean over stages)");
}

// "TP 1.2 ms, PP 0.3 ms, DP 4.5 ms": each dimension the report gives, its figure formatted.
template <typename Figure>
std::string per_dimension(const ReportedDims& dims, Figure figure) {
  std::string text;
  for (const DimensionFigures& d : dimension_figures)
    if (reported(d.dim, dims)) text += (text.empty() ? "" : ", ") + std::string(d.label) + " " + figure(d);
  return text;
}

void add_communication(std::string& out, const StepReport& r) {
  add_line(out, "exposed comm",
           per_dimension(r.dims, [&](const DimensionFigures& d) { return ms(r.mean_split.*d.exposed_seconds); }) +
               "  (not hidden by compute, mean over stages)");
  auto percents = [&](const CommRatios& c) {
    return per_dimension(r.dims, [&](const DimensionFigures& d) { return format("%.1f %%", c.*d.ratio * 100); });
  };
  const std::string most = "rank " + std::to_string(r.most_exposed_rank) + format(", %.1f %%", r.most_exposed_over_compute * 100);
  add_line(out, "comm / compute", percents(r.comm_over_compute) + "  (all communication time / compute, mean over ranks)");
  add_line(out, "exposed / compute", percents(r.exposed_over_compute) + "  (most: " + most + ")");
  if (r.ranks_over_warning > 0)
    add_line(out, "WARNING", format("exposed communication exceeds %.0f %% of compute", exposed_comm_warning_fraction * 100) +
                                 " on " + std::to_string(r.ranks_over_warning) + " of " + std::to_string(r.ranks.size()) +
                                 " ranks (most: " + most + ")");
  if (!r.busiest_links.empty()) {
    std::string links;
    for (size_t i = 0; i < r.busiest_links.size() && i < 4; ++i) {
      const LinkLoad& l = r.busiest_links[i];
      links += (i ? ", " : "") + l.link + format(" %.1f %%", 100 * l.bytes / (l.bytes_per_second * r.step_seconds));
    }
    add_line(out, "busiest links", links + "  (bytes carried / (bandwidth x step time))");
  }
}

// The stage that needs the most memory, and what that memory holds.
void add_memory(std::string& out, const StepReport& r) {
  const StageFigures* worst = &peak_memory_stage(r);
  const MemoryBreakdown& m = worst->memory;
  add_line(out, "memory per GPU", format("%.1f GiB", m.total_bytes() / GiB) + format(" of %.0f GiB", r.gpu_memory_bytes / GiB) +
                                      (r.out_of_memory ? "  OUT OF MEMORY" : "  fits") + " (peak: stage " +
                                      std::to_string(worst->pipeline_rank) + ")");
  add_line(out, "", format("weights %.1f GiB", m.weights_bytes / GiB) + format(", gradients %.1f", m.gradients_bytes / GiB) +
                        format(", optimizer %.1f", m.optimizer_bytes / GiB) +
                        format(", activations %.1f", m.activations_bytes / GiB) +
                        format(", reserve %.1f", m.reserve_bytes / GiB) + " (" +
                        std::to_string(m.peak_in_flight_microbatches) + " micro-batch chunks in flight)");
}

void add_stage_table(std::string& out, const StepReport& r) {
  auto column = [](const std::string& text) {  // left-aligned in 11 characters, then two spaces
    return text + std::string(std::max<size_t>(11, text.size()) - text.size() + 2, ' ');
  };
  // The time a stage's compute stream waited for its host, where some stage's prints as at least 0.1 ms.
  const bool host_bound = std::any_of(r.stages.begin(), r.stages.end(),
                                      [](const StageFigures& st) { return st.host_wait_seconds >= 0.05e-3; });
  out += "\nstage  " + column("compute");
  for (const DimensionFigures& d : dimension_figures)
    if (reported(d.dim, r.dims)) out += column(d.label + std::string(" exposed"));
  out += column("idle") + (host_bound ? column("host-bound") : "") + "memory\n";
  for (const StageFigures& st : r.stages) {
    out += format("%5.0f  ", st.pipeline_rank) + column(ms(st.time.compute_seconds));
    for (const DimensionFigures& d : dimension_figures)
      if (reported(d.dim, r.dims)) out += column(ms(st.time.*d.exposed_seconds));
    out += column(ms(st.time.idle_seconds)) + (host_bound ? column(ms(st.host_wait_seconds)) : "") +
           (r.memory_known ? format("%.1f GiB", st.memory.total_bytes() / GiB) : "-") + "\n";
  }
}

// Where compute times came from, and what the simulation did.
void add_simulation_footer(std::string& out, const StepReport& r) {
  out += "\ncompute times from:";
  for (const auto& [op_class, sources] : r.time_sources) {
    out += " " + op_class + " (";
    bool first = true;
    for (const auto& [source, count] : sources) out += (first ? "" : ", ") + with_commas(count) + " " + source, first = false;
    out += ")";
  }
  out += "\nsimulated " + with_commas(r.tasks) + " tasks (" + with_commas(r.simulated_tasks) + " by actors in " +
         with_commas(r.simulated_replicas) + " of " + with_commas(r.data_parallel_replicas) +
         " data-parallel replicas, one per class of " +
         (r.approximate_after_rounds ? "replicas alike over " + std::to_string(r.approximate_after_rounds) +
                                           " rounds of refinement: approximate, --full-replay for exact"
                                     : std::string("equivalent ones")) +
         "), " +
         with_commas(r.flows) + " network flows, " + with_commas(r.closed_form_collectives) +
         " closed-form collectives, in " + format("%.2f s", r.wall_seconds) + "\n";
}

}  // namespace

std::string to_text(const StepReport& r) {
  std::string out = "simtrain: " + r.scenario_name + "\n";
  for (const std::string& summary_line : r.scenario_summary_lines) out += summary_line + "\n";
  if (!r.scenario_summary_lines.empty()) out += "\n";
  if (r.stopped) out += format("JOB STOPPED at %.4f s: ", r.step_seconds) + r.stop_reason + " (figures below cover the step until then)\n";
  add_step_figures(out, r);
  add_communication(out, r);
  if (r.memory_known) add_memory(out, r);
  add_stage_table(out, r);
  add_simulation_footer(out, r);
  return out;
}

}  // namespace simtrain
