#pragma once
// One rank's Chakra execution trace as read from disk: its GlobalMetadata and
// Nodes, length-delimited protobuf messages (shared by the importer and the
// replay check).
#include <string>
#include <utility>
#include <vector>

#include "sim/chakra/et_def.pb.h"

namespace simtrain {

struct ChakraRankFile {
  std::string path;
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

// The file may be gzip-compressed (read whole, then parsed). Throws InputError
// naming the file (and the node after which it breaks) for a file that cannot
// be read, is empty or is truncated.
ChakraRankFile read_chakra_rank_file(const std::string& path);

// Every rank's trace PREFIX.<rank>.et, from rank 0 up to the first file that
// does not exist. Throws InputError naming PREFIX.0.et where there is none
// ("no such file (the trace of rank 0 of " + `whose` + ")"), and as
// read_chakra_rank_file.
std::vector<ChakraRankFile> read_chakra_rank_files(const std::string& prefix, const std::string& whose);

using ChakraAttributes = google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>;
const ChakraProtoMsg::AttributeProto* find_chakra_attribute(const ChakraAttributes& attributes, const std::string& name);

// A comm_groups.json file's groups (name -> member ranks, in the file's
// order). Throws InputError naming the file (and the group) for malformed
// JSON, or a member that is not one of `ranks` traces' ranks (the error then
// says "rank R, " + `ranks_text`).
using ChakraCommGroups = std::vector<std::pair<std::string, std::vector<int>>>;
ChakraCommGroups read_chakra_comm_groups(const std::string& path, int ranks, const std::string& ranks_text);

// `node`'s integer attribute `name` (int32, int64 or uint64). Throws
// InputError naming the file and "<node label>: <name>" where it is missing
// or not an integer.
int64_t chakra_integer_attribute(const ChakraRankFile& file, const ChakraProtoMsg::Node& node, const std::string& name);

// "node 12 (allreduce dp0 24MiB)", or "node 12" for a node without a name.
std::string chakra_node_label(const ChakraProtoMsg::Node& node);

}  // namespace simtrain
