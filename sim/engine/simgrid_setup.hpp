#pragma once
// The SimGrid configuration every simulation here shares: the replay of a
// step and the checkpoint storage transfers model the same kind of network.
namespace simtrain {

// Host speed in "flop" units: compute tasks execute seconds * speed, which
// SimGrid times exactly; the GPU's real speed is already in the seconds.
constexpr double host_speed_flops = 1e9;

// Silences SimGrid's log and sets its network model for GPU fabrics. Call it
// once the simgrid::s4u::Engine exists and before the first zone is created
// (the first zone instantiates the models).
void configure_simgrid();

}  // namespace simtrain
