#pragma once
// What one full checkpoint costs to move to and from each tier, all ranks at
// once: every rank's shard (checkpoint_bytes_per_rank) into its node's host
// memory and local disk (each node at the tier's bandwidth: nothing crosses
// the fabric), to the shared storage and to peer nodes' host memory (SimGrid
// flows through the NICs: storage_transfer.hpp). Throws InputError where a
// tier's capacity cannot hold what it must keep.
#include <vector>

#include "sim/model/workload.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// A host-memory tier's default bandwidth per GPU: PCIe Gen5 x16, 64 GB/s each
// way (the H100 SXM datasheet's 128 GB/s PCIe Gen5, both ways together).
constexpr double host_memory_bytes_per_second_per_gpu = 64e9;

struct TierSeconds {
  double write_seconds = 0;
  double read_seconds = 0;
};

struct CheckpointCost {
  double bytes = 0;                   // the whole checkpoint
  std::vector<double> bytes_per_rank;
  double node_bytes = 0;              // the most any node holds
  TierSeconds shared;                 // every rank to or from the shared storage at once
  TierSeconds host_memory;            // every GPU into its node's host memory
  TierSeconds local_disk;             // (0: no such tier)
  bool has_local_disk = false;
  // A node's shard to its peers' host memory (write: every node at once,
  // to peer_replicas peers each; read: a replaced node's, from one peer).
  TierSeconds peer_memory;
};

CheckpointCost checkpoint_cost(const Scenario& scenario, const Workload& workload, const Program& program);

}  // namespace simtrain
