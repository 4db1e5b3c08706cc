#pragma once
// The failure model of a training run: what in the cluster can fail, how
// often (the reliability section's MTBFs, per GPU, node, physical link and
// leaf switch), what each failure does to the job (a redundant link only
// slows the step; everything else stops the job), the failures scheduled at
// known times, and how a run draws its random failures.
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "sim/engine/replay_options.hpp"
#include "sim/scenario/run_config.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

class Fabric;

// A kind of failure and what it does to the job.
struct FailureSource {
  Component component = Component::gpu;
  double rate_per_second = 0;  // over the whole cluster
  bool stops_job = true;       // else it degrades the step (a redundant link) until repaired
};

struct ClusterFailures {
  // GPUs, nodes, links without redundancy, redundant links, leaf switches.
  std::vector<FailureSource> random;
  std::vector<std::pair<double, FailureSource>> scheduled;  // (time, what) known in advance
  double stop_mtbf_seconds = 0;  // mean time between random failures that stop the job (0: none)
  bool scheduled_stops = false;  // a scheduled failure stops the job
  // When a redundant link can fail (at random or scheduled): the step's
  // failure while one of its physical links is down, for the degraded step time.
  std::optional<FailureEvent> degrading_failure;
};

// The failures of `scenario`'s cluster of `world_size` GPUs. Throws
// InputError for a scheduled failure of a component the cluster lacks.
ClusterFailures cluster_failures(const Scenario& scenario, int world_size);

// The fabric's physical links (a duplex cable or bundle each), redundant or not.
double physical_cables(const Fabric& fabric);

// Throws InputError for a scheduled failure after `horizon_seconds`, the end of the run.
void check_scheduled_before(const Scenario& scenario, double horizon_seconds);

// A run's random failures, drawn the same way on every platform from its
// seed: exponential inter-arrival times at the sources' total rate, each
// failure from a source with a probability proportional to its rate.
class FailureDraws {
public:
  FailureDraws(const std::vector<FailureSource>& sources, uint64_t seed);
  // When the next failure after `from_seconds` comes; infinity when nothing fails.
  double next_after(double from_seconds);
  const FailureSource& source();

private:
  const std::vector<FailureSource>& sources_;
  std::mt19937_64 random_;
  double total_rate_ = 0;
};

}  // namespace simtrain
