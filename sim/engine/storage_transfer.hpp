#pragma once
// Checkpoint traffic on SimGrid: every rank moves its shard at once, each
// through its node's NIC (full duplex: one link each way), to the shared
// storage, whose bandwidth all of them share, or to the host memory of other
// nodes (peer replicas, as Gemini keeps them). A flow per NIC standing for a
// step's collective traffic may run beside it: max-min sharing then slows
// both where they meet on a NIC.
#include <vector>

#include "sim/scenario/topology.hpp"

namespace simtrain {

struct CheckpointFlows {
  std::vector<double> bytes_per_rank;
  double storage_bytes_per_second = 0;  // all ranks together
  double storage_latency_seconds = 0;
  // > 0: each rank's bytes go to the same GPU slot of each of the next
  // peer_nodes nodes (wrapping round), not to the storage.
  int peer_nodes = 0;
  // > 0: each NIC also sends this many bytes to the same NIC of the next node.
  double competing_bytes_per_nic = 0;
};

struct CheckpointFlowTimes {
  double checkpoint_seconds = 0;  // until the last checkpoint flow ends
  double competing_seconds = 0;   // until the last competing flow ends (0: none)
};

CheckpointFlowTimes simulate_checkpoint_flows(const CheckpointFlows& flows, const Topology& topology);

// Seconds until the last rank's bytes have reached the storage, nothing
// beside them (the storage's defaults: CheckpointConfig in
// sim/scenario/run_config.hpp).
double storage_transfer_seconds(const std::vector<double>& bytes_per_rank, const Topology& topology,
                                double storage_bytes_per_second, double storage_latency_seconds);

}  // namespace simtrain
