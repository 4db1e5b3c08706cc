#pragma once
// The communicators a Program needs. Every rank derives the same list in the
// same order, because communicators are created collectively: one per group
// and stream the group is used on (a communicator serves one stream, so that
// two streams never interleave their calls on it), and one per ordered pair
// of ranks with point-to-point transfers (the sender's compute stream and
// the receiver's p2p queue for that peer).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

struct CommunicatorSpec {
  std::string name;        // "tp0 on compute", "send 0->2"
  std::vector<int> ranks;  // a member's index here is its rank in the communicator
};

struct CommunicatorPlan {
  std::vector<CommunicatorSpec> specs;
  // Index into specs of the communicator a collective, SEND or RECV task uses.
  int of_task(const Task& task) const;

  std::map<std::pair<int, Stream>, int> by_group_and_stream;
  std::map<std::pair<int, int>, int> by_sender_and_receiver;
};

CommunicatorPlan plan_communicators(const Program& program);

}  // namespace simtrain
