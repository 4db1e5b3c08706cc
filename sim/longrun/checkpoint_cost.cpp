#include "sim/longrun/checkpoint_cost.hpp"

#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/engine/storage_transfer.hpp"
#include "sim/step/memory_model.hpp"

namespace simtrain {

CheckpointCost checkpoint_cost(const Scenario& s, const Workload& workload, const Program& program) {
  if (s.cluster.topology.kind == TopologyKind::simgrid_platform)
    throw InputError(s.cluster.topology.platform_file, "",
                     "checkpoint writes to storage go through each node's NICs, which a SimGrid platform file does "
                     "not name: train on a JSON topology");
  const std::vector<double> shards = checkpoint_bytes_per_rank(s, workload, program);
  const CheckpointConfig& storage = s.run.checkpoint;
  CheckpointCost cost;
  for (double b : shards) cost.bytes += b;
  cost.write_seconds = storage_transfer_seconds(shards, s.cluster.topology, storage.storage_write_bytes_per_second,
                                                storage.storage_latency_seconds);
  cost.read_seconds = storage_transfer_seconds(shards, s.cluster.topology, storage.storage_read_bytes_per_second,
                                               storage.storage_latency_seconds);
  return cost;
}

}  // namespace simtrain
