#pragma once
// Chakra execution traces (mlcommons/chakra) as a Program to replay on
// simtrain's network: `<prefix>.<rank>.et` for ranks 0, 1, ... (as many as
// exist), each a GlobalMetadata then Nodes, length-delimited; and
// `<prefix>.comm_groups.json` ({"1": [ranks], ...}, ASTRA-sim's
// --comm-group-configuration) where it exists, else each pg_name's group is
// the ranks whose collectives name it, in rank order.
//
// Per node:
// - COMP_NODE: a compute task of its recorded duration_micros (one Work per
//   distinct duration, num_ops and tensor_size; the Work holds no ops, its
//   fixed_seconds is the duration, so any cost model gives it back);
// - COMM_COLL_NODE of ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL: the
//   collective over its pg_name's group ("0" or none: every rank), of comm_size
//   bytes as ASTRA-sim reads them (comm_size.hpp): an all-gather's output is
//   comm_size times the group's size, as simtrain counts it;
// - COMM_SEND_NODE / COMM_RECV_NODE: a transfer, matched by (comm_src,
//   comm_dst, comm_tag) with its other side, which must exist and agree on comm_size;
// - a node with is_cpu_op true (a host-side op of a trace converted from
//   PyTorch, whose GPU kernels are nodes of their own) is ignored as below;
// - anything else (METADATA_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, other
//   collectives: REDUCE, GATHER, SCATTER, BROADCAST, BARRIER ...) is ignored:
//   it takes no time, and what waits for it waits for what it waited for.
//   ChakraTraces::ignored counts them by type, for the report.
// data_deps and ctrl_deps name nodes of the same file (ctrl_deps unread in a
// trace converted from PyTorch: ChakraTraces::from_pytorch).
//
// Traces simtrain wrote (sim/chakra/simtrain_attributes.hpp) give back the
// Program exported: its streams, task kinds, dimensions, p2p batches, repeated
// collectives and tp x dp x pp layout; ctrl_deps, which held the task before on
// its stream, are then the streams' order. Other traces have no streams:
// compute runs in file order on the compute stream, collectives on a stream
// of their own (the dp stream, in file order), each transfer eagerly on its
// peer's p2p queue, and ctrl_deps are dependencies like data_deps; the
// report counts collectives as DP communication and transfers as PP, and
// each rank is a pipeline stage of its own.
#include <map>
#include <string>
#include <vector>

#include "sim/program/program.hpp"

namespace simtrain {

struct ChakraTraces {
  Program program;
  std::vector<double> work_seconds;     // by Program::works index: the recorded durations
  std::vector<std::string> files;       // read: the ranks' in rank order, then the groups' if it exists
  std::map<std::string, long long> ignored;  // node type (or "COMM_COLL_NODE BROADCAST") -> nodes ignored
  double recorded_flops = 0;            // the COMP_NODEs' num_ops, all ranks
  // Converted by Chakra's PyTorch converter (GlobalMetadata has PyTorch's
  // `schema` and `pid`, mlcommons/chakra 21585d8 src/converter/pytorch_converter.py:638-646):
  // its ctrl_deps are the call tree (caller -> callee, :298-299) and its
  // data_deps the execution order (:411-422), so only data_deps are read.
  bool from_pytorch = false;
};

// Throws InputError naming the file, the node and field, and the reason, for
// a missing or truncated file, a rank the traces do not have, a dependency
// on an unknown node, a transfer without its other side.
ChakraTraces import_chakra(const std::string& prefix);

// "12 nodes of type MEM_LOAD_NODE ignored, 3 nodes of type ...": empty when none were.
std::string ignored_text(const ChakraTraces& traces);

}  // namespace simtrain
