#include "sim/chakra/chakra_file.hpp"

#include <filesystem>
#include <fstream>
#include <limits>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <nlohmann/json.hpp>

#include "sim/base/gzip_stream.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"

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

std::vector<ChakraRankFile> read_chakra_rank_files(const std::string& prefix, const std::string& whose) {
  std::vector<ChakraRankFile> files;
  for (int rank = 0;; ++rank) {
    const std::string path = prefix + "." + std::to_string(rank) + ".et";
    if (!std::filesystem::exists(path)) {
      if (rank == 0) throw InputError(path, "", "no such file (the trace of rank 0 of " + whose + ")");
      return files;
    }
    files.push_back(read_chakra_rank_file(path));
  }
}

int64_t chakra_integer_attribute(const ChakraRankFile& file, const ChakraProtoMsg::Node& node, const std::string& name) {
  const ChakraProtoMsg::AttributeProto* a = find_chakra_attribute(node.attr(), name);
  const std::string field = chakra_node_label(node) + ": " + name;
  if (!a) throw InputError(file.path, field, "missing");
  switch (a->value_case()) {
    case ChakraProtoMsg::AttributeProto::kInt32Val: return a->int32_val();
    case ChakraProtoMsg::AttributeProto::kInt64Val: return a->int64_val();
    case ChakraProtoMsg::AttributeProto::kUint64Val: return static_cast<int64_t>(a->uint64_val());
    default: throw InputError(file.path, field, "not an integer");
  }
}

const ChakraProtoMsg::AttributeProto* find_chakra_attribute(const ChakraAttributes& attributes, const std::string& name) {
  for (const ChakraProtoMsg::AttributeProto& a : attributes)
    if (a.name() == name) return &a;
  return nullptr;
}

ChakraCommGroups read_chakra_comm_groups(const std::string& path, int ranks, const std::string& ranks_text) {
  std::ifstream in(path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, "", json_error_reason(e));
  }
  if (!doc.is_object()) throw InputError(path, "", "not a JSON object of group name -> ranks");
  ChakraCommGroups groups;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& members = it.value();
    if (!members.is_array()) throw InputError(path, name, "not an array of ranks");
    std::vector<int> member_ranks;
    for (const nlohmann::json& r : members) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= ranks)
        throw InputError(path, name, "rank " + r.dump() + ", " + ranks_text);
      member_ranks.push_back(r.get<int>());
    }
    groups.emplace_back(name, std::move(member_ranks));
  }
  return groups;
}

std::string chakra_node_label(const ChakraProtoMsg::Node& node) {
  return "node " + std::to_string(node.id()) + (node.name().empty() ? "" : " (" + node.name() + ")");
}

}  // namespace simtrain
