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

// How a save blocks training: `sync`, until every tier holds it (training
// stops, as a plain torch.save or Megatron's default save); `async`, only
// while each GPU copies its shard into host memory, the other tiers being
// written in the background (PyTorch DCP async_save, Megatron --async-save);
// `in_memory`, as async, and the host copy is also sent to peer_replicas
// other nodes' host memory (Gemini, SOSP'23), which survives a lost node.
enum class CheckpointMode { sync, async, in_memory };
std::string to_string(CheckpointMode mode);

// Where a checkpoint can be kept: a node's own host memory or local disk
// (lost with the node), or the shared storage every node writes to.
enum class StorageKind { host_memory, local_disk, shared };
std::string to_string(StorageKind kind);

// A per-node tier (host memory, local disk): bandwidth and capacity per node.
struct StorageTier {
  StorageKind kind = StorageKind::host_memory;
  double write_bytes_per_second = 0;  // per node; 0: the kind's default (host memory: PCIe, checkpoint_cost.hpp)
  double read_bytes_per_second = 0;
  double capacity_bytes = 0;          // per node; 0: not checked
  int64_t keep = 1;                   // checkpoints it retains
};

// Incremental saves: every full_every-th save is full, the others hold what
// changed since the save before. changed_fraction_per_step: the fraction of
// the checkpoint's bytes one step changes (1 for dense Adam training, whose
// step rewrites every weight and both moments; Check-N-Run, NSDI'22, saves
// recommendation models' embedding rows that a step touched).
struct IncrementalCheckpoints {
  int64_t full_every = 1;
  double changed_fraction_per_step = 1;
};

struct CheckpointConfig {
  CheckpointMode mode = CheckpointMode::sync;
  int64_t every_steps = 0;        // one of these two, or neither for the Young/Daly optimum
  double every_minutes = 0;
  // The shared storage, always the last tier (a "shared" entry of `tiers` sets it too).
  double storage_write_bytes_per_second = 200e9;
  double storage_read_bytes_per_second = 500e9;
  double storage_latency_seconds = 1e-3;  // not a scenario field
  double storage_capacity_bytes = 0;      // 0: not checked
  int64_t storage_keep = 1;
  std::vector<StorageTier> node_tiers;    // host memory, then local disk, as stated
  int64_t peer_replicas = 0;              // in_memory: copies in other nodes' host memory
  int64_t persist_every = 1;              // every n-th save reaches the shared storage (sync: 1)
  IncrementalCheckpoints incremental;
};

struct RunConfig {
  ReliabilityConfig reliability;
  CheckpointConfig checkpoint;
};

// Reads the optional "reliability" and "checkpoint" sections. Throws InputError.
RunConfig parse_run_config(const nlohmann::json* reliability, const nlohmann::json* checkpoint, const std::string& file);

}  // namespace simtrain
