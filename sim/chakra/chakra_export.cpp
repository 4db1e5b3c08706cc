#include "sim/chakra/chakra_export.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <unordered_map>

#include <google/protobuf/util/delimited_message_util.h>
#include <nlohmann/json.hpp>

#include "sim/base/atomic_file.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/output_files.hpp"
#include "sim/chakra/communication_order.hpp"
#include "sim/chakra/comm_size.hpp"
#include "sim/chakra/et_def.pb.h"
#include "sim/chakra/simtrain_attributes.hpp"
#include "sim/program/trace.hpp"

namespace simtrain {

namespace {

namespace chakra = ChakraProtoMsg;
namespace attribute = chakra_attributes;

chakra::CollectiveCommType comm_type(TaskKind kind) {
  switch (kind) {
    case TaskKind::ALLREDUCE: return chakra::ALL_REDUCE;
    case TaskKind::REDUCESCATTER: return chakra::REDUCE_SCATTER;
    case TaskKind::ALLGATHER: return chakra::ALL_GATHER;
    case TaskKind::ALLTOALL: return chakra::ALL_TO_ALL;
    default: throw std::logic_error("not a collective: " + to_string(kind));
  }
}

void add_attribute(chakra::Node& node, const std::string& name, auto set_value) {
  chakra::AttributeProto* attribute = node.add_attr();
  attribute->set_name(name);
  set_value(*attribute);
}

// The nodes of one rank's tasks, in issue order.
class RankNodes {
public:
  RankNodes(const Program& program, const std::vector<double>& work_seconds,
            const std::vector<int32_t>& communication_before, int rank)
      : program_(program), work_seconds_(work_seconds), communication_before_(communication_before), rank_(rank) {
    for (const TaskQueue& queue : task_queues(program, rank))
      for (size_t i = 1; i < queue.tasks.size(); ++i) queue_predecessor_[queue.tasks[i]] = queue.tasks[i - 1];
    // Each task's last node, known before any is written: the communication
    // chain may name a task later in the file.
    for (const int id : program.rank_tasks(rank)) {
      const int count = program.tasks[id].count;
      last_node_of_[id] = count > 1 ? program.tasks.size() + extra_ids_ + count - 2 : uint64_t(id);
      extra_ids_ += count - 1;
    }
    extra_ids_ = 0;
  }

  std::vector<chakra::Node> build() {
    std::vector<chakra::Node> nodes;
    for (const int id : program_.rank_tasks(rank_)) add_task(program_.tasks[id], nodes);
    return nodes;
  }

private:
  // The id of a node repeating a task's collective (the first node has the
  // task's id): ids after every task id of the Program.
  uint64_t next_repeat_id() { return program_.tasks.size() + extra_ids_++; }

  void add_task(const Task& task, std::vector<chakra::Node>& nodes) {
    chakra::Node node;
    node.set_id(uint64_t(task.id));
    node.set_name(task_name(program_, task));
    add_attribute(node, "is_cpu_op", [](auto& a) { a.set_bool_val(false); });
    add_attribute(node, attribute::kKind, [&](auto& a) { a.set_string_val(to_string(task.kind)); });
    add_attribute(node, attribute::kStream, [&](auto& a) { a.set_string_val(to_string(task.stream)); });
    if (!is_compute(task.kind)) add_attribute(node, attribute::kDim, [&](auto& a) { a.set_string_val(to_string(task.dim)); });
    for (const int32_t dep : program_.deps(task))
      if (program_.tasks[dep].rank == rank_) node.add_data_deps(uint64_t(dep));
    if (const auto before = queue_predecessor_.find(task.id); before != queue_predecessor_.end())
      node.add_ctrl_deps(last_node_of_.at(before->second));
    if (const int32_t held = communication_before_[task.id]; held >= 0) {
      const uint64_t held_node = last_node_of_.at(held);
      if (node.ctrl_deps().empty() || node.ctrl_deps(0) != held_node) node.add_ctrl_deps(held_node);
    }
    const int64_t bytes = std::llround(task.bytes);
    if (is_compute(task.kind)) {
      const Work& work = program_.works.at(task.work);
      node.set_type(chakra::COMP_NODE);
      node.set_duration_micros(std::max<uint64_t>(1, std::llround(work_seconds_.at(task.work) * 1e6)));
      add_attribute(node, "num_ops", [&](auto& a) { a.set_int64_val(std::llround(work.flops())); });
      add_attribute(node, "tensor_size", [&](auto& a) { a.set_uint64_val(std::llround(work.bytes())); });
    } else if (task.kind == TaskKind::SEND || task.kind == TaskKind::RECV) {
      const bool send = task.kind == TaskKind::SEND;
      node.set_type(send ? chakra::COMM_SEND_NODE : chakra::COMM_RECV_NODE);
      const int tag = send ? task.id : program_.deps(task).front();  // a RECV's one dependency is its SEND
      add_attribute(node, "comm_src", [&](auto& a) { a.set_int32_val(send ? rank_ : task.peer); });
      add_attribute(node, "comm_dst", [&](auto& a) { a.set_int32_val(send ? task.peer : rank_); });
      add_attribute(node, "comm_size", [&](auto& a) { a.set_int64_val(bytes); });
      add_attribute(node, "comm_tag", [&](auto& a) { a.set_int32_val(tag); });
      if (task.joins_batch) add_attribute(node, attribute::kJoinsBatch, [](auto& a) { a.set_bool_val(true); });
    } else {
      node.set_type(chakra::COMM_COLL_NODE);
      add_attribute(node, "comm_type", [&](auto& a) { a.set_int64_val(comm_type(task.kind)); });
      const int group_size = static_cast<int>(program_.groups.at(task.group).ranks.size());
      add_attribute(node, "comm_size", [&](auto& a) { a.set_int64_val(chakra_comm_size(task.kind, task.bytes, group_size)); });
      add_attribute(node, "pg_name", [&](auto& a) { a.set_string_val(std::to_string(task.group + 1)); });  // index + 1
    }
    uint64_t last = node.id();
    nodes.push_back(node);
    for (int repeat = 1; repeat < task.count; ++repeat) {
      chakra::Node next = node;
      next.set_id(next_repeat_id());
      next.set_name(node.name() + " #" + std::to_string(repeat + 1));
      next.clear_data_deps();
      next.clear_ctrl_deps();
      next.add_ctrl_deps(last);
      add_attribute(next, attribute::kRepeatOf, [&](auto& a) { a.set_uint64_val(node.id()); });
      last = next.id();
      nodes.push_back(std::move(next));
    }
  }

  const Program& program_;
  const std::vector<double>& work_seconds_;
  const std::vector<int32_t>& communication_before_;  // task id -> the slot holder before it (communication_order.hpp)
  const int rank_;
  std::unordered_map<int, int> queue_predecessor_;  // task id -> the task before it on its queue
  std::unordered_map<int, uint64_t> last_node_of_;  // task id -> its last node (of `count`)
  uint64_t extra_ids_ = 0;
};

void write_nodes(std::ostream& out, const Program& program, const std::string& program_hash, int rank,
                 const std::vector<chakra::Node>& nodes) {
  chakra::GlobalMetadata metadata;
  metadata.set_version("1.0.0");  // what Chakra's own generator writes
  auto add = [&](const char* name) {
    chakra::AttributeProto* attribute = metadata.add_attr();
    attribute->set_name(name);
    return attribute;
  };
  add(attribute::kProgramHash)->set_string_val(program_hash);
  add(attribute::kCommSize)->set_string_val(attribute::kCommSizeAsAstraSim);
  add(attribute::kTensorSize)->set_int64_val(program.tensor_size);
  add(attribute::kPipelineSize)->set_int64_val(program.pipeline_size);
  if (size_t(rank) < program.coords.size()) {  // a Program made by hand may have none
    const RankCoord& coord = program.coords[rank];
    add(attribute::kRankCoord)->set_string_val(std::to_string(coord.tp) + " " + std::to_string(coord.dp) + " " +
                                               std::to_string(coord.pp));
  }
  google::protobuf::util::SerializeDelimitedToOstream(metadata, &out);
  for (const chakra::Node& node : nodes) google::protobuf::util::SerializeDelimitedToOstream(node, &out);
}

}  // namespace

ChakraExport export_chakra(const Program& program, const std::vector<double>& work_seconds, const std::string& prefix,
                           const std::string& option, ExistingFiles existing,
                           const std::function<void(int ranks_written)>& on_rank) {
  if (program.servers > 0)
    throw InputError(option, "", "a Program with parameter-server hosts cannot be written as Chakra traces: their "
                                 "nodes are NPUs only, and the servers are hosts beside the GPUs");
  // Every path checked before anything is written.
  OutputFiles checks(std::cerr, existing);
  ChakraExport result;
  for (int rank = 0; rank < program.world_size; ++rank) {
    result.files.push_back(prefix + "." + std::to_string(rank) + ".et");
    checks.add(option + " (rank " + std::to_string(rank) + ")", result.files.back());
  }
  result.files.push_back(prefix + ".comm_groups.json");
  checks.add(option + " (groups)", result.files.back());

  // One file at a time, each complete or as it was (thousands of ranks are
  // too many to stage together); an interrupted export can leave files of
  // two exports side by side, which the program hash in each file's
  // GlobalMetadata tells apart. One rank's nodes at a time in memory.
  const std::string hash = program_hash(program);
  const std::vector<int32_t> communication_before = communication_predecessors(program, work_seconds);
  for (int rank = 0; rank < program.world_size; ++rank) {
    write_file_atomically(result.files[rank], [&](std::ostream& out) {
      const std::vector<chakra::Node> nodes = RankNodes(program, work_seconds, communication_before, rank).build();
      result.nodes += nodes.size();
      write_nodes(out, program, hash, rank, nodes);
    });
    if (on_rank) on_rank(rank + 1);
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::object();
  for (size_t i = 0; i < program.groups.size(); ++i) groups[std::to_string(i + 1)] = program.groups[i].ranks;
  write_file_atomically(result.files.back(), [&](std::ostream& out) { out << groups.dump(1) << "\n"; });
  return result;
}

}  // namespace simtrain
