#pragma once
// Chakra execution traces written by hand, as another tool would write them,
// for the importer's and the replay check's tests.
#include <fstream>
#include <string>
#include <vector>

#include <google/protobuf/util/delimited_message_util.h>

#include "sim/chakra/et_def.pb.h"

namespace simtrain::fixtures {

namespace chakra = ChakraProtoMsg;

// Named `name`, or "n<id>".
inline chakra::Node node(uint64_t id, chakra::NodeType type, std::vector<uint64_t> data_deps = {},
                         const std::string& name = "") {
  chakra::Node n;
  n.set_id(id);
  n.set_name(name.empty() ? "n" + std::to_string(id) : name);
  n.set_type(type);
  for (uint64_t dep : data_deps) n.add_data_deps(dep);
  return n;
}

inline chakra::Node& with(chakra::Node& n, const std::string& name, int64_t value) {
  chakra::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
  return n;
}

inline void write_trace(const std::string& path, const chakra::GlobalMetadata& metadata,
                        const std::vector<chakra::Node>& nodes) {
  std::ofstream out(path, std::ios::binary);
  google::protobuf::util::SerializeDelimitedToOstream(metadata, &out);
  for (const chakra::Node& n : nodes) google::protobuf::util::SerializeDelimitedToOstream(n, &out);
}

inline void write_trace(const std::string& path, const std::vector<chakra::Node>& nodes) {
  chakra::GlobalMetadata metadata;
  metadata.set_version("0.0.4");
  write_trace(path, metadata, nodes);
}

}  // namespace simtrain::fixtures
