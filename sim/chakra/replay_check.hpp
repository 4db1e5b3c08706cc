#pragma once
// Chakra traces replayed under ASTRA-sim's execution rules (astra-sim/astra-sim
// 8ee4478, astra-sim/workload/Workload.cc and HardwareResource.cc; see
// communication_order.hpp), to find a deadlock before ASTRA-sim does:
// - per rank, a node is issued once its data_deps and ctrl_deps are done,
//   dependency-free nodes in ascending id, if its resource is free: one
//   COMP_NODE at a time, and one COMM_COLL_NODE or COMM_SEND_NODE at a time
//   (held until it completes); a COMM_RECV_NODE holds nothing; other node
//   types finish as they are issued;
// - a collective completes when every rank of its group (pg_name, from
//   PREFIX.comm_groups.json; none: every rank) has issued it, the k-th of a
//   group on one rank matching the k-th on the others, which must agree on
//   comm_type and comm_size;
// - a send completes after its transfer whether or not its receive is posted
//   (the analytical backend's eager sends, CommonNetworkApi.cc:34-64), a
//   receive once its send, matched by (comm_src, comm_dst, comm_tag) and of
//   the same comm_size, has completed.
// Compute takes its duration_micros; communication a stand-in time
// (1 us + 1 ns per 100 bytes), which orders events but is no prediction.
#include <string>

namespace simtrain {

struct ReplayCheck {
  int ranks = 0;
  long long nodes = 0;
  double end_micros = 0;  // when the last node finished, on the stand-in network
};

// Throws InputError naming the file, node and reason for traces that cannot
// run to the end: a deadlock (the ranks and the nodes they wait in, round the
// cycle), collectives of one group that disagree, a send without its receive
// or of another size, a dependency on an unknown node.
ReplayCheck check_chakra_replay(const std::string& prefix);

}  // namespace simtrain
