#include "sim/chakra/chakra_file.hpp"

#include <fstream>
#include <limits>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include "sim/base/gzip_stream.hpp"
#include "sim/base/input_error.hpp"

namespace simtrain {

ChakraRankFile read_chakra_rank_file(const std::string& path) {
  ChakraRankFile file{path, {}, {}};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot be read");
  const std::string content = read_maybe_gzipped(in, path);
  if (content.size() > size_t(std::numeric_limits<int>::max()))  // protobuf's streams count in int
    throw InputError(path, "", "larger than 2 GiB: one rank's trace is read whole");
  google::protobuf::io::ArrayInputStream stream(content.data(), static_cast<int>(content.size()));
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&file.metadata, &stream, &clean_eof))
    throw InputError(path, "GlobalMetadata",
                     clean_eof ? "the file is empty" : "truncated, or not a length-delimited protobuf message");
  for (;;) {
    ChakraProtoMsg::Node node;
    if (google::protobuf::util::ParseDelimitedFromZeroCopyStream(&node, &stream, &clean_eof)) {
      file.nodes.push_back(std::move(node));
      continue;
    }
    if (clean_eof) return file;
    const std::string after = file.nodes.empty() ? "the GlobalMetadata" : "node " + std::to_string(file.nodes.back().id());
    throw InputError(path, "node " + std::to_string(file.nodes.size() + 1) + " of the file (after " + after + ")",
                     "truncated, or not a length-delimited protobuf message");
  }
}

const ChakraProtoMsg::AttributeProto* find_chakra_attribute(const ChakraAttributes& attributes, const std::string& name) {
  for (const ChakraProtoMsg::AttributeProto& a : attributes)
    if (a.name() == name) return &a;
  return nullptr;
}

std::string chakra_node_label(const ChakraProtoMsg::Node& node) {
  return "node " + std::to_string(node.id()) + (node.name().empty() ? "" : " (" + node.name() + ")");
}

}  // namespace simtrain
