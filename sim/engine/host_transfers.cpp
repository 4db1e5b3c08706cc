#include "sim/engine/host_transfers.hpp"

#include <stdexcept>

namespace sg4 = simgrid::s4u;

namespace simtrain {

namespace {

// What a transfer carries: SimGrid needs a payload, the replay none.
int payload = 0;

// Takes each finished transfer off its mailbox, so that none stays in memory.
void drain(sg4::Mailbox* inbox) {
  for (;;) {
    try {
      inbox->get<int>();
    } catch (const simgrid::NetworkFailureException&) {
      // the sender is told as well, and stops the job
    }
  }
}

}  // namespace

HostTransfers::HostTransfers(const std::vector<sg4::Host*>& destinations) {
  for (sg4::Host* host : destinations) {
    if (inbox_.count(host)) continue;
    sg4::Mailbox* inbox = sg4::Mailbox::by_name("inbox:" + host->get_name());
    sg4::ActorPtr receiver = sg4::Actor::create("receiver:" + host->get_name(), host, drain, inbox);
    receiver->daemonize();
    inbox->set_receiver(receiver);
    inbox_.emplace(host, inbox);
  }
}

std::vector<sg4::CommPtr> HostTransfers::start(const std::vector<HostTransfer>& transfers) const {
  sg4::Host* home = sg4::this_actor::get_host();
  std::vector<sg4::CommPtr> comms;
  comms.reserve(transfers.size());
  for (const HostTransfer& t : transfers) {
    auto inbox = inbox_.find(t.to);
    if (inbox == inbox_.end()) throw std::logic_error("a transfer to a host without a receiver: " + t.to->get_name());
    if (sg4::this_actor::get_host() != t.from) sg4::this_actor::set_host(t.from);
    sg4::CommPtr comm = inbox->second->put_init(&payload, t.bytes);
    if (t.max_bytes_per_second > 0) comm->set_rate(t.max_bytes_per_second);
    comm->start();
    comms.push_back(comm);
  }
  if (sg4::this_actor::get_host() != home) sg4::this_actor::set_host(home);
  return comms;
}

}  // namespace simtrain
