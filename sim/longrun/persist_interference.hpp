#pragma once
// What a save's background copies and the training steps do to each other
// where they share the NICs. On SimGrid, the copies run beside one flow per
// NIC that stands for the step's collective traffic: max-min sharing gives
// each its part of every NIC they meet on, so the copies take longer than
// alone (`stretch`) and take `nic_share` of the busiest NIC. The step is
// then replayed with every NIC at the rest of its bandwidth, once per kind
// of copy: the step time while such a copy runs, from the replay, not a
// constant.
#include <string>

#include "sim/engine/replay_options.hpp"
#include "sim/longrun/checkpoint_cost.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// One kind of background copy beside the step.
struct CopyInterference {
  double stretch = 1;       // its time beside the step's traffic, over alone
  double nic_share = 0;     // of the busiest NIC's bandwidth it takes while both run
  double step_seconds = 0;  // a step replayed with that share taken from every NIC (0: not replayed)
};

struct PersistInterference {
  CopyInterference shared;  // the persist to the shared storage
  CopyInterference peers;   // the copies to peer nodes' host memory
  std::string note;         // why it was not simulated, where it was not
};

// `shared_persist`: the save goes on to the shared storage in the
// background; `peer_copies`: to peer nodes' host memory.
PersistInterference persist_interference(const Scenario& scenario, const ReplayOptions& replay, double step_seconds,
                                         const CheckpointCost& cost, bool shared_persist, bool peer_copies);

// The extra time the steps take while one save's background copies cross
// the NICs: over each kind's seconds (beside the steps), a step takes that
// kind's replayed step time instead of `step_seconds`.
double persist_slowdown_seconds(const PersistInterference& interference, double shared_seconds, double peer_seconds,
                                double step_seconds);

}  // namespace simtrain
