#pragma once
// Host-to-host transfers that cost SimGrid the same whatever the number in
// flight. SimGrid 3.32's Comm::sendto_async detaches every comm, and each
// finished detached comm is taken out of one global std::list by a linear
// scan (CommImpl::finish), so a step's cost grew with the flows in flight
// times the flows: 129,024 flows, 63 in flight per host of 512, took 34.8 s
// against 1.2 s through mailboxes, for the same simulated times
// (simtrain_bench_simgrid_transfers 512, 2026-12-04). A mailbox comm is
// only listed by the actor that sent it.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u.hpp>

namespace simtrain {

struct HostTransfer {
  simgrid::s4u::Host* from = nullptr;
  simgrid::s4u::Host* to = nullptr;
  uint64_t bytes = 0;
  double max_bytes_per_second = 0;  // the sender's bound on its rate (Flow's); 0: the links' alone
};

class HostTransfers {
public:
  // A receiving daemon on each of `destinations`: a transfer to one starts
  // as soon as it is posted (SimGrid's permanent receivers). Call it from
  // the engine's setup, before the actors that send.
  explicit HostTransfers(const std::vector<simgrid::s4u::Host*>& destinations);

  // Starts every transfer at once, from the calling actor: it moves to each
  // source host to post (a comm leaves from its sender's host) and returns
  // to its own host, all in no simulated time. Each `to` must be a
  // destination.
  std::vector<simgrid::s4u::CommPtr> start(const std::vector<HostTransfer>& transfers) const;

private:
  std::unordered_map<const simgrid::s4u::Host*, simgrid::s4u::Mailbox*> inbox_;
};

}  // namespace simtrain
