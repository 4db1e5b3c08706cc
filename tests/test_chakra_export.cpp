// The Chakra export, read back by a decoder written here from the published
// schema (mlcommons/chakra schema/protobuf/et_def.proto: Node's field
// numbers, AttributeProto's oneof), not by the generated code that wrote it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/chakra/chakra_export.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/trace.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

// ---- a protobuf wire-format reader, enough for Chakra's Node ----

struct Wire {
  const std::string& data;
  size_t pos = 0, end = 0;

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= end || shift > 63) throw std::runtime_error("bad varint");
      const uint8_t byte = uint8_t(data[pos++]);
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
  }
  // The next field: its number and wire type; its payload is read by the caller.
  std::pair<int, int> field() {
    const uint64_t key = varint();
    return {int(key >> 3), int(key & 7)};
  }
  Wire sub() {  // a length-delimited payload
    const size_t length = varint();
    if (pos + length > end) throw std::runtime_error("length past the end");
    Wire inner{data, pos, pos + length};
    pos += length;
    return inner;
  }
  std::string text() {
    const Wire inner = sub();
    return data.substr(inner.pos, inner.end - inner.pos);
  }
  void skip(int wire_type) {
    if (wire_type == 0) varint();
    else if (wire_type == 1) pos += 8;
    else if (wire_type == 2) sub();
    else if (wire_type == 5) pos += 4;
    else throw std::runtime_error("wire type " + std::to_string(wire_type));
  }
  bool done() const { return pos >= end; }
};

using Value = std::variant<int64_t, bool, std::string>;

struct Node {
  uint64_t id = 0, duration_micros = 0;
  std::string name;
  int type = 0;
  std::vector<uint64_t> ctrl_deps, data_deps;
  std::map<std::string, Value> attr;
  int64_t integer(const std::string& key) const { return std::get<int64_t>(attr.at(key)); }
};

// Node type and collective numbers of the schema.
constexpr int kCompNode = 4, kSendNode = 5, kRecvNode = 6, kCollNode = 7;
constexpr int kAllReduce = 0, kAllGather = 2, kAllToAll = 6, kReduceScatter = 7;

void read_ids(Wire& wire, int wire_type, std::vector<uint64_t>& ids) {
  if (wire_type == 0) return ids.push_back(wire.varint());
  Wire packed = wire.sub();
  while (!packed.done()) ids.push_back(packed.varint());
}

std::pair<std::string, Value> read_attribute(Wire wire) {
  std::string name;
  Value value;
  while (!wire.done()) {
    const auto [number, type] = wire.field();
    if (number == 1) name = wire.text();
    else if (number == 7 || number == 9 || number == 13) value = int64_t(wire.varint());  // int32, int64, uint64
    else if (number == 27) value = wire.varint() != 0;
    else if (number == 29) value = wire.text();
    else wire.skip(type);
  }
  return {name, value};
}

Node read_node(Wire wire) {
  Node node;
  while (!wire.done()) {
    const auto [number, type] = wire.field();
    if (number == 1) node.id = wire.varint();
    else if (number == 2) node.name = wire.text();
    else if (number == 3) node.type = int(wire.varint());
    else if (number == 4) read_ids(wire, type, node.ctrl_deps);
    else if (number == 5) read_ids(wire, type, node.data_deps);
    else if (number == 7) node.duration_micros = wire.varint();
    else if (number == 10) node.attr.insert(read_attribute(wire.sub()));
    else wire.skip(type);
  }
  return node;
}

struct EtFile {
  std::string version;
  std::map<std::string, Value> attr;  // GlobalMetadata's
  std::vector<Node> nodes;
};

EtFile read_et(const std::string& path) {
  const std::string data = fixtures::read_text(path);
  Wire stream{data, 0, data.size()};
  EtFile file;
  Wire metadata = stream.sub();
  while (!metadata.done()) {
    const auto [number, type] = metadata.field();
    if (number == 1) file.version = metadata.text();
    else if (number == 2) file.attr.insert(read_attribute(metadata.sub()));
    else metadata.skip(type);
  }
  while (!stream.done()) file.nodes.push_back(read_node(stream.sub()));
  return file;
}

// ---- the export ----

struct Exported {
  Program program;
  std::vector<double> work_seconds;
  std::vector<EtFile> ranks;
  nlohmann::json groups;
};

Exported export_and_read(const Scenario& scenario, const std::string& label) {
  const fixtures::TemporaryDirectory dir("chakra-" + label);
  Exported e{build_program(scenario, build_workload(scenario)), {}, {}, {}};
  e.work_seconds = work_durations(e.program, *make_cost_model(scenario), scenario.training.dtype);
  const std::string prefix = (dir.path() / "trace").string();
  const ChakraExport written = export_chakra(e.program, e.work_seconds, prefix, "OUT_PREFIX");
  EXPECT_EQ(written.files.size(), size_t(e.program.world_size) + 1);
  size_t nodes = 0;
  for (int rank = 0; rank < e.program.world_size; ++rank) {
    e.ranks.push_back(read_et(prefix + "." + std::to_string(rank) + ".et"));
    nodes += e.ranks.back().nodes.size();
  }
  EXPECT_EQ(nodes, written.nodes);
  e.groups = fixtures::read_json(prefix + ".comm_groups.json");
  return e;
}

int comm_type_of(TaskKind kind) {
  switch (kind) {
    case TaskKind::ALLREDUCE: return kAllReduce;
    case TaskKind::ALLGATHER: return kAllGather;
    case TaskKind::REDUCESCATTER: return kReduceScatter;
    default: return kAllToAll;
  }
}

// The laws every export keeps, whatever the scenario.
void expect_faithful(const Exported& e, const std::string& label) {
  SCOPED_TRACE(label);
  const Program& program = e.program;
  ASSERT_EQ(e.groups.size(), program.groups.size());
  for (size_t g = 0; g < program.groups.size(); ++g)
    EXPECT_EQ(e.groups.at(std::to_string(g + 1)).get<std::vector<int>>(), program.groups[g].ranks);

  // SEND (src, dst, tag, bytes) -> how many; each RECV takes one away: bytes sent = bytes received.
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int> unmatched;
  // Per group: each member's sequence of (collective, bytes), which must agree.
  std::map<std::string, std::map<int, std::vector<std::pair<int64_t, int64_t>>>> collectives;
  for (int rank = 0; rank < program.world_size; ++rank) {
    const EtFile& file = e.ranks[rank];
    EXPECT_EQ(file.version, "1.0.0");
    EXPECT_EQ(std::get<std::string>(file.attr.at("simtrain_program_hash")), program_hash(program));
    // Every task of the rank once (count of them for repeated collectives), under its id.
    size_t expected_nodes = 0;
    for (const int id : program.rank_tasks(rank)) expected_nodes += program.tasks[id].count;
    ASSERT_EQ(file.nodes.size(), expected_nodes) << "rank " << rank;
    std::set<uint64_t> ids;
    for (const Node& node : file.nodes) EXPECT_TRUE(ids.insert(node.id).second) << node.name;
    for (const int id : program.rank_tasks(rank)) EXPECT_TRUE(ids.count(uint64_t(id))) << id;
    std::map<uint64_t, const Node*> by_id;
    for (const Node& node : file.nodes) by_id[node.id] = &node;
    for (const Node& node : file.nodes) {
      for (const auto* deps : {&node.ctrl_deps, &node.data_deps})
        for (uint64_t dep : *deps) EXPECT_TRUE(ids.count(dep)) << node.name << " waits for " << dep << ", not in its file";
      EXPECT_FALSE(std::get<bool>(node.attr.at("is_cpu_op")));
      if (node.id >= program.tasks.size()) continue;  // a repeat: checked with its task below
      const Task& task = program.tasks[node.id];
      EXPECT_EQ(node.name, task_name(program, task));
      for (const int32_t dep : program.deps(task))
        if (program.tasks[dep].rank == rank)
          EXPECT_NE(std::find(node.data_deps.begin(), node.data_deps.end(), uint64_t(dep)), node.data_deps.end())
              << node.name;
      if (is_compute(task.kind)) {
        EXPECT_EQ(node.type, kCompNode);
        const double micros = e.work_seconds[task.work] * 1e6;
        EXPECT_EQ(node.duration_micros, std::max<uint64_t>(1, std::llround(micros))) << node.name;
        EXPECT_EQ(node.integer("num_ops"), std::llround(program.works[task.work].flops())) << node.name;
      } else if (task.kind == TaskKind::SEND) {
        EXPECT_EQ(node.type, kSendNode);
        EXPECT_EQ(node.integer("comm_src"), rank);
        ++unmatched[{rank, node.integer("comm_dst"), node.integer("comm_tag"), node.integer("comm_size")}];
      } else if (task.kind == TaskKind::RECV) {
        EXPECT_EQ(node.type, kRecvNode);
        EXPECT_EQ(node.integer("comm_dst"), rank);
        --unmatched[{node.integer("comm_src"), rank, node.integer("comm_tag"), node.integer("comm_size")}];
      } else {
        EXPECT_EQ(node.type, kCollNode);
        EXPECT_EQ(node.integer("comm_type"), comm_type_of(task.kind)) << node.name;
        const std::string group = std::get<std::string>(node.attr.at("pg_name"));
        const std::vector<int> members = e.groups.at(group).get<std::vector<int>>();
        EXPECT_NE(std::find(members.begin(), members.end(), rank), members.end()) << node.name << " in group " << group;
        // comm_size as ASTRA-sim reads it (Ring.cc:70-88 at astra-sim 8ee4478): an all-gather's is each rank's
        // input, its share of the gathered output simtrain counts; every other kind's is what simtrain counts.
        const double per_rank = task.kind == TaskKind::ALLGATHER ? task.bytes / double(members.size()) : task.bytes;
        EXPECT_EQ(node.integer("comm_size"), std::llround(per_rank)) << node.name;
        for (int repeat = 0; repeat < task.count; ++repeat)
          collectives[group][rank].push_back({node.integer("comm_type"), node.integer("comm_size")});
      }
    }
  }
  for (const auto& [send, balance] : unmatched)
    EXPECT_EQ(balance, 0) << "send " << std::get<0>(send) << "->" << std::get<1>(send) << " tag " << std::get<2>(send);
  for (const auto& [group, by_rank] : collectives) {
    EXPECT_EQ(by_rank.size(), e.groups.at(group).size()) << "group " << group;
    for (const auto& [rank, sequence] : by_rank)
      EXPECT_EQ(sequence, by_rank.begin()->second) << "group " << group << ", rank " << rank;
  }
}

TEST(ChakraExport, TinyScenarioKeepsEveryTaskPairAndCollective) {
  const Exported e = export_and_read(load_scenario("tiny-4gpu"), "tiny");
  expect_faithful(e, "tiny-4gpu");
  // Something of each kind was written.
  std::set<int> types;
  for (const EtFile& file : e.ranks)
    for (const Node& node : file.nodes) types.insert(node.type);
  EXPECT_EQ(types, (std::set<int>{kCompNode, kSendNode, kRecvNode, kCollNode}));
}

TEST(ChakraExport, DataParallelZeroAndPipelineScenario) {
  nlohmann::json doc = fixtures::scenario_json(2, 2, 2, 4, "1f1b");
  doc["parallelism"]["zero_stage"] = 1;
  doc["parallelism"]["overlap_grad_reduce"] = true;
  expect_faithful(export_and_read(fixtures::scenario_from(doc), "zero1"), "TP2 PP2 DP2 ZeRO-1");
}

TEST(ChakraExport, ExpertParallelAllToAll) {
  const Exported e = export_and_read(load_scenario("mixtral-8x7b-64xh100"), "moe");
  expect_faithful(e, "mixtral");
  size_t all_to_all = 0;
  for (const Node& node : e.ranks[0].nodes)
    all_to_all += node.type == kCollNode && node.integer("comm_type") == kAllToAll;
  EXPECT_GT(all_to_all, 0u);
}

TEST(ChakraExport, AllGatherCommSizeIsEachRanksInput) {
  // ZeRO-1's weight all-gather over 4 ranks: simtrain counts the gathered
  // weights, ASTRA-sim's all-gather takes each rank's quarter of them.
  nlohmann::json doc = fixtures::scenario_json(1, 1, 4, 4, "1f1b");
  doc["parallelism"]["zero_stage"] = 1;
  const Exported e = export_and_read(fixtures::scenario_from(doc), "allgather");
  size_t all_gathers = 0;
  for (const Node& node : e.ranks[0].nodes) {
    if (node.type != kCollNode || node.integer("comm_type") != kAllGather || node.id >= e.program.tasks.size()) continue;
    ++all_gathers;
    const double gathered_bytes = e.program.tasks[node.id].bytes;
    EXPECT_GT(gathered_bytes, 1e6) << node.name;
    EXPECT_EQ(node.integer("comm_size"), std::llround(gathered_bytes / 4)) << node.name;
  }
  EXPECT_GT(all_gathers, 0u);
}

TEST(ChakraExport, RefusesParameterServers) {
  const Scenario s = load_scenario("tiny-4gpu", {"cluster.num_gpus=8", "dp_sync=parameter_server", "parameter_servers=2"});
  const Program program = build_program(s, build_workload(s));
  ASSERT_GT(program.servers, 0);
  const fixtures::TemporaryDirectory dir("chakra-ps");
  try {
    export_chakra(program, std::vector<double>(program.works.size(), 1e-3), (dir.path() / "t").string(), "OUT_PREFIX");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("OUT_PREFIX: a Program with parameter-server hosts"), std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // nothing written
}

}  // namespace
}  // namespace simtrain
