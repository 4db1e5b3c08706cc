#pragma once
// What a long training run needs beyond one step: how often components fail,
// how failures are handled, how checkpoints are taken and where they go, and
// what the GPUs cost.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simtrain {

enum class Component { gpu, node, link, switch_ };
std::string to_string(Component component);

// A failure at a known time: GPU/node `index`, or the fabric link `link`.
struct ScheduledFailure {
  Component component = Component::gpu;
  int64_t index = 0;
  std::string link;
  double at_seconds = 0;
};

struct ReliabilityConfig {
  // Mean time between failures of one component; 0 means it never fails.
  double gpu_mtbf_hours = 0;
  double node_mtbf_hours = 0;
  double link_mtbf_hours = 0;    // per physical link (NIC cables, switch uplinks)
  double switch_mtbf_hours = 0;  // per leaf switch
  double repair_hours = 4;       // until a failed component is back
  int64_t spare_nodes = 0;       // hot spares: a restart need not wait for the repair
  double detection_seconds = 60;    // from the failure until the job is known dead (NCCL timeout, health checks)
  double reschedule_seconds = 300;  // re-queueing and re-initialising the job
  uint64_t seed = 1;
  std::vector<ScheduledFailure> scheduled;
  // The scenario gives an MTBF (else `train` takes published rates,
  // sim/longrun/published_failure_rates.hpp), and spare_nodes.
  bool rates_stated = false;
  bool spares_stated = false;
};

struct CheckpointConfig {
  int64_t every_steps = 0;        // one of these two, or neither for the Young/Daly optimum
  double every_minutes = 0;
  double storage_write_bytes_per_second = 200e9;
  double storage_read_bytes_per_second = 500e9;
  double storage_latency_seconds = 1e-3;  // not a scenario field
};

struct RunConfig {
  ReliabilityConfig reliability;
  CheckpointConfig checkpoint;
};

// Reads the optional "reliability" and "checkpoint" sections. Throws InputError.
RunConfig parse_run_config(const nlohmann::json* reliability, const nlohmann::json* checkpoint, const std::string& file);

}  // namespace simtrain
