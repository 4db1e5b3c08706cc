#pragma once
// A Program as Chakra execution traces (mlcommons/chakra), the workload
// format ASTRA-sim replays: one file per rank, `<prefix>.<rank>.et`, each a
// stream of length-delimited protobuf messages (a GlobalMetadata, then one
// Node per task), and `<prefix>.comm_groups.json`, the communicator groups
// for ASTRA-sim's --comm-group-configuration.
//
// Per task:
// - compute (F, B, W, R, OPT, COMPRESS, DECOMPRESS): COMP_NODE, its duration
//   from the cost model (whole microseconds, as the schema has them; at least
//   1), num_ops its FLOPs, tensor_size its bytes;
// - collectives: COMM_COLL_NODE, comm_type, comm_size as ASTRA-sim reads it
//   (comm_size.hpp: the buffer of an all-reduce, the input of a reduce-scatter,
//   each rank's input of an all-gather, the send buffer of an all-to-all),
//   pg_name its group (its index in Program::groups + 1; ASTRA-sim reserves "0" for
//   all ranks); a task standing for `count` back-to-back collectives becomes
//   `count` nodes, each waiting for the one before;
// - SEND / RECV: COMM_SEND_NODE / COMM_RECV_NODE with comm_src, comm_dst,
//   comm_size and comm_tag (the SEND's task id, so each pair matches).
// Node ids are the Program's task ids. data_deps are the task's dependencies
// on its own rank (a RECV's on its SEND becomes the tag); ctrl_deps hold the
// task before it on the same queue (stream, and peer on the p2p stream),
// since Chakra has no streams and runs whatever is ready, and, for a
// collective or a SEND, the collective or SEND before it in the order a
// consumer running one communication node per rank at a time must issue them
// (communication_order.hpp: ASTRA-sim's rule; without it the last stage's
// embedding all-reduce could hold its rank's one slot before its last send).
// Beyond Chakra's fields, simtrain's own attributes (simtrain_attributes.hpp:
// streams, kinds, dimensions, p2p batches, repeats, the tp x dp x pp layout),
// which Chakra's readers skip and import_chakra reads to give the Program back.
#include <functional>
#include <string>
#include <vector>

#include "sim/base/output_files.hpp"
#include "sim/program/program.hpp"

namespace simtrain {

struct ChakraExport {
  std::vector<std::string> files;  // written, the ranks' in rank order, then the groups'
  size_t nodes = 0;
};

// Writes the files, every path checked first, each file complete or as it was
// (sim/base/atomic_file.hpp); GlobalMetadata carries simtrain_program_hash.
// `work_seconds[w]` is the duration of Program::works[w]. Throws InputError
// for a Program Chakra cannot express (parameter-server hosts) or a prefix
// that cannot be written (naming `option`), or where one of the files exists
// and `existing` is ExistingFiles::refuse (the command had no --force).
// `on_rank` (if set) is called after each rank's file with the ranks written.
ChakraExport export_chakra(const Program& program, const std::vector<double>& work_seconds, const std::string& prefix,
                           const std::string& option, ExistingFiles existing = ExistingFiles::refuse,
                           const std::function<void(int ranks_written)>& on_rank = {});

}  // namespace simtrain
