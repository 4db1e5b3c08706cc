#include "sim/longrun/save_phases.hpp"

#include <algorithm>
#include <cmath>

namespace simtrain {

double changed_fraction(double per_step, int64_t steps) {
  if (per_step >= 1) return 1;
  return -std::expm1(static_cast<double>(std::max<int64_t>(steps, 1)) * std::log1p(-per_step));
}

double SavePhases::background_seconds() const {
  double last = 0;
  for (const TierCopy& copy : copies) last = std::max(last, copy.ready_seconds);
  return last;
}

SavePhases save_phases(const CheckpointConfig& c, const CheckpointCost& cost, int64_t steps_between_saves,
                       double shared_stretch, double peer_stretch) {
  SavePhases p;
  // Incremental saves: a full one, then full_every - 1 holding what changed
  // since the save before; a restore reads the full one and the increments
  // since, on average half the chain.
  const double chain = static_cast<double>(c.incremental.full_every);
  const double changed = changed_fraction(c.incremental.changed_fraction_per_step, steps_between_saves);
  p.save_fraction = (1 + (chain - 1) * changed) / chain;
  p.restore_fraction = 1 + changed * (chain - 1) / 2;
  // Host memory and peer replicas hold the whole state (a snapshot of every
  // tensor); local disk and shared storage take the incremental saves.
  const TierSeconds local{cost.local_disk.write_seconds * p.save_fraction, cost.local_disk.read_seconds * p.restore_fraction};
  const TierSeconds shared{cost.shared.write_seconds * p.save_fraction, cost.shared.read_seconds * p.restore_fraction};
  const bool host_listed = std::any_of(c.node_tiers.begin(), c.node_tiers.end(),
                                       [](const StorageTier& t) { return t.kind == StorageKind::host_memory; });
  if (c.mode == CheckpointMode::sync) {
    // Training waits for every tier, one after the other.
    if (host_listed) p.copies.push_back({Tier::host_memory, 0, cost.host_memory.read_seconds, 1});
    if (cost.has_local_disk) p.copies.push_back({Tier::local_disk, 0, local.read_seconds, 1});
    p.copies.push_back({Tier::shared, 0, shared.read_seconds, 1});
    p.blocking_seconds = (host_listed ? cost.host_memory.write_seconds : 0) + local.write_seconds + shared.write_seconds;
    return p;
  }
  // Async and in-memory: training waits for the copy into host memory only.
  // An async save's host copy is its staging buffer inside the training
  // processes (PyTorch DCP's CPU buffers): any restart loses it. In-memory
  // saves keep it in an agent outside them (Gemini; DLRover's flash
  // checkpoint, in shared memory), which a restart on the same node reads.
  p.blocking_seconds = cost.host_memory.write_seconds;
  if (c.mode == CheckpointMode::in_memory) p.copies.push_back({Tier::host_memory, 0, cost.host_memory.read_seconds, 1});
  double peers = 0;  // the background network copies, one after the other
  if (c.mode == CheckpointMode::in_memory) {
    peers = cost.peer_memory.write_seconds * peer_stretch;
    p.copies.push_back({Tier::peer_memory, peers, cost.peer_memory.read_seconds, 1});
  }
  if (cost.has_local_disk) p.copies.push_back({Tier::local_disk, local.write_seconds, local.read_seconds, 1});
  const double persist = shared.write_seconds * shared_stretch;
  p.copies.push_back({Tier::shared, peers + persist, shared.read_seconds, c.persist_every});
  p.peer_seconds_per_save = peers;
  p.shared_seconds_per_save = persist / static_cast<double>(c.persist_every);
  return p;
}

}  // namespace simtrain
