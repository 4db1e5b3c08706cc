#pragma once
// The figures users read after a simulated step: speed, efficiency, where
// time went on each pipeline stage, and memory per GPU.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/cost_model.hpp"
#include "sim/model/workload.hpp"
#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/step/memory_model.hpp"
#include "sim/step/step_time_band.hpp"

namespace simtrain {

// Where one rank's step time went. Every instant is counted once: compute,
// else exposed communication (TP before EP before CP before PP before DP
// when several overlap; EP: the experts' token dispatch and combine, CP: the
// K/V exchange), else idle (the pipeline bubble, and waiting for the peers
// of a collective: a collective's timing starts when its whole group has
// arrived, see sim/program/timeline.hpp). The seven add up to the step time.
struct TimeSplit {
  double compute_seconds = 0;
  double exposed_tp_seconds = 0;
  double exposed_ep_seconds = 0;
  double exposed_cp_seconds = 0;
  double exposed_pp_seconds = 0;
  double exposed_dp_seconds = 0;
  double idle_seconds = 0;
  // Communication of each dimension, hidden by compute or not (its tasks' union).
  double tp_seconds = 0;
  double ep_seconds = 0;
  double cp_seconds = 0;
  double pp_seconds = 0;
  double dp_seconds = 0;

  double exposed_seconds() const {
    return exposed_tp_seconds + exposed_ep_seconds + exposed_cp_seconds + exposed_pp_seconds + exposed_dp_seconds;
  }
};

// A warning is printed where exposed communication exceeds this fraction of compute.
constexpr double exposed_comm_warning_fraction = 0.30;

// Communication over compute time, per parallel dimension.
struct CommRatios {
  double tp = 0, ep = 0, cp = 0, pp = 0, dp = 0;
};

// The dimensions a job communicates over beyond TP, PP and DP: the report
// gives their figures only where the job has them (a dense job's report
// reads as it did before they were split out).
struct ReportedDims {
  bool ep = false;  // expert-parallel groups of two ranks or more
  bool cp = false;  // context-parallel groups of two ranks or more
};

TimeSplit split_rank_time(const Program& program, const Timeline& timeline, int rank, double step_seconds);

struct StageFigures {
  int pipeline_rank = 0;
  int rank = 0;  // the rank measured (tp 0, dp 0 of this stage)
  TimeSplit time;
  MemoryBreakdown memory;
  double host_wait_seconds = 0;  // of its idle time: waiting for the host to launch kernels
};

// The step again with one resource slower: which one the step hinges on.
struct Sensitivity {
  bool computed = false;               // false: skipped (a Program too large, sim/engine/simulate.hpp)
  double compute_slower_seconds = 0;   // every compute task 10 % longer
  double network_slower_seconds = 0;   // every link at half its bandwidth
};
inline constexpr double kSensitivityComputeFactor = 1.1;
inline constexpr double kSensitivityNetworkFactor = 0.5;

struct StepReport {
  std::string scenario_name;
  // What was simulated (sim/step/scenario_summary.hpp); empty for a recorded trace.
  std::vector<std::string> scenario_summary_lines;
  nlohmann::ordered_json scenario_summary;
  nlohmann::json configuration;  // the scenario document as simulated, for the record
  double step_seconds = 0;
  // How far published runs of the scenario's class were from their
  // predictions, and the GPU whose figures' provenance sets that class;
  // absent for a recorded trace.
  std::optional<StepTimeBandVerdict> step_time_band;
  std::optional<GpuSpec> gpu;
  bool stopped = false;  // a failure stopped the job: the figures cover the time until then
  std::string stop_reason;
  // false: a replayed trace, which says nothing of the tokens a step trains
  // or of the model's FLOPs: throughput, model TFLOP/s and MFU stay 0 and are not reported.
  bool workload_known = true;
  double tokens_per_second = 0;
  double model_tflops_per_gpu = 0;     // without recompute
  double hardware_tflops_per_gpu = 0;  // with recompute
  double mfu = 0;
  double bubble_fraction = 0;             // idle / step, mean over stages
  double bubble_over_compute = 0;         // Megatron's definition: idle / compute
  ReportedDims dims;                      // whether EP and CP figures are given
  TimeSplit mean_split;                   // mean over stages
  std::vector<StageFigures> stages;
  std::vector<TimeSplit> ranks;           // every rank's split, by rank
  CommRatios comm_over_compute;           // mean over ranks
  CommRatios exposed_over_compute;        // mean over ranks
  int most_exposed_rank = 0;              // the highest exposed communication / compute
  double most_exposed_over_compute = 0;
  int ranks_over_warning = 0;             // ranks above exposed_comm_warning_fraction
  std::vector<LinkLoad> busiest_links;    // from the timeline
  bool memory_known = true;  // false: a replayed trace, which says nothing of memory (the figures below stay 0)
  double gpu_memory_bytes = 0;
  double peak_memory_bytes = 0;
  bool out_of_memory = false;
  // op class -> time source -> number of ops timed that way in the step
  std::map<std::string, std::map<std::string, long long>> time_sources;
  long long tasks = 0;
  long long simulated_tasks = 0;
  int data_parallel_replicas = 1;
  int simulated_replicas = 1;  // one per class of equivalent replicas (sim/engine/replica_classes.hpp)
  int approximate_after_rounds = 0;  // Timeline's: 0 where classes hold exactly equivalent replicas
  long long flows = 0;
  long long closed_form_collectives = 0;
  double wall_seconds = 0;
  std::optional<Sensitivity> sensitivity;  // asked for (simulate's `sensitivity`)
  // Mean over stages of the time their compute streams waited for the host
  // to launch kernels (idle, but where another stream ran meanwhile); empty
  // where the hosts were not simulated.
  std::optional<double> host_wait_seconds;
};

// The figures a timeline alone gives (a recorded trace has no scenario):
// step time and, per pipeline stage (its tp 0, dp 0 rank), where the time
// went; bubble fraction and the mean split. Other fields stay zero.
StepReport timing_report(const Program& program, const Timeline& timeline);
// What the replay says of itself: whether it stopped and why, the tasks it
// simulated, the data-parallel replicas it ran of all, its flows and
// closed-form collectives.
void add_replay_figures(StepReport& report, const Program& program, const Timeline& timeline);

StepReport make_report(const Scenario& scenario, const Workload& workload, const Program& program,
                       const Timeline& timeline, const CostModel& cost_model, double wall_seconds);

// The pipeline stage whose GPU needs the most memory (the first of equals).
const StageFigures& peak_memory_stage(const StepReport& report);

// In the text report's order: what was simulated first.
nlohmann::ordered_json to_json(const StepReport& report);
std::string to_text(const StepReport& report);

}  // namespace simtrain
