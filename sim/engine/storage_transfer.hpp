#pragma once
// Checkpoint traffic: every rank writes (or reads) its shard at once, each
// through its node's NIC, into a storage system whose bandwidth all of them
// share. Simulated with SimGrid flows, so NIC sharing and the storage
// bottleneck both show.
#include <vector>

#include "sim/scenario/topology.hpp"

namespace simtrain {

// Seconds until the last rank's bytes have moved (the storage's defaults:
// CheckpointConfig in sim/scenario/run_config.hpp).
double storage_transfer_seconds(const std::vector<double>& bytes_per_rank, const Topology& topology,
                                double storage_bytes_per_second, double storage_latency_seconds);

}  // namespace simtrain
