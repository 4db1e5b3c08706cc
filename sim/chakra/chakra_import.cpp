#include "sim/chakra/chakra_import.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "sim/base/enum_named.hpp"
#include "sim/base/input_error.hpp"
#include "sim/chakra/chakra_file.hpp"
#include "sim/chakra/comm_size.hpp"
#include "sim/chakra/et_def.pb.h"
#include "sim/chakra/simtrain_attributes.hpp"

namespace simtrain {

namespace {

namespace chakra = ChakraProtoMsg;
namespace attribute = chakra_attributes;
using RankFile = ChakraRankFile;

const chakra::AttributeProto* find_attribute(const ChakraAttributes& attributes, const std::string& name) {
  return find_chakra_attribute(attributes, name);
}
std::string node_label(const chakra::Node& node) { return chakra_node_label(node); }

std::optional<TaskKind> collective_kind(int64_t comm_type) {
  switch (comm_type) {
    case chakra::ALL_REDUCE: return TaskKind::ALLREDUCE;
    case chakra::ALL_GATHER: return TaskKind::ALLGATHER;
    case chakra::REDUCE_SCATTER: return TaskKind::REDUCESCATTER;
    case chakra::ALL_TO_ALL: return TaskKind::ALLTOALL;
    default: return std::nullopt;
  }
}

// A host-side op of a trace converted from PyTorch (its GPU kernels are nodes of their own).
bool runs_on_cpu(const chakra::Node& node) {
  const chakra::AttributeProto* a = find_attribute(node.attr(), "is_cpu_op");
  return a && a->value_case() == chakra::AttributeProto::kBoolVal && a->bool_val();
}

std::string type_name(const chakra::Node& node) {
  const std::string name = chakra::NodeType_IsValid(node.type()) ? chakra::NodeType_Name(node.type()) : "";
  return name.empty() ? "type " + std::to_string(node.type()) : name;
}

// Reads the traces into a Program, rank by rank, two passes: what each node
// is (a task, a repeat of one, or ignored), then the tasks' dependencies,
// which may name a SEND on a later rank.
class Importer {
public:
  explicit Importer(const std::string& prefix) : prefix_(prefix) {}

  ChakraTraces run() {
    files_ = read_chakra_rank_files(prefix_, "--chakra " + prefix_);
    for (const RankFile& file : files_) result_.files.push_back(file.path);
    world_ = static_cast<int>(files_.size());
    hinted_ = std::all_of(files_.begin(), files_.end(), [](const RankFile& f) {
      return find_attribute(f.metadata.attr(), attribute::kTensorSize) != nullptr;
    });
    for (const RankFile& f : files_) {
      const chakra::AttributeProto* convention = find_attribute(f.metadata.attr(), attribute::kCommSize);
      if (hinted_ && (!convention || convention->string_val() != attribute::kCommSizeAsAstraSim))
        throw InputError(f.path, std::string("GlobalMetadata: ") + attribute::kCommSize,
                         "missing: written by a simtrain before issue 42, whose all-gathers' comm_size held the "
                         "gathered output, not each rank's input as ASTRA-sim reads it; export the traces again");
    }
    result_.from_pytorch = std::all_of(files_.begin(), files_.end(), [](const RankFile& f) {
      return find_attribute(f.metadata.attr(), "schema") && find_attribute(f.metadata.attr(), "pid");
    });
    Program& program = result_.program;
    program.world_size = world_;
    read_groups();
    task_of_node_.resize(world_);
    for (int rank = 0; rank < world_; ++rank) classify(rank);
    match_transfers();
    for (int rank = 0; rank < world_; ++rank) {
      for (size_t i = rank_first_task_[rank]; i < pending_.size() && pending_[i].task.rank == rank; ++i)
        program.add_task(pending_[i].task, dependencies(pending_[i]));
      program.end_rank();
    }
    set_layout();
    for (const Pending& p : pending_) program.recorded_names.push_back(p.node->name());
    return std::move(result_);
  }

private:
  struct Pending {
    Task task;
    const chakra::Node* node;
    int send = -1;  // a RECV's SEND
  };
  static constexpr int kIgnored = -1;

  std::string field(const chakra::Node& node, const std::string& name) const { return node_label(node) + ": " + name; }

  int64_t integer(const RankFile& file, const chakra::Node& node, const std::string& name) const {
    return chakra_integer_attribute(file, node, name);
  }
  int64_t integer_or_zero(const RankFile& file, const chakra::Node& node, const std::string& name) const {
    return find_attribute(node.attr(), name) ? integer(file, node, name) : 0;
  }
  std::string text(const RankFile& file, const chakra::Node& node, const std::string& name) const {
    const chakra::AttributeProto* a = find_attribute(node.attr(), name);
    if (!a) return "";
    if (a->value_case() != chakra::AttributeProto::kStringVal) throw InputError(file.path, field(node, name), "not a string");
    return a->string_val();
  }
  template <typename Enum>
  Enum hint(const RankFile& file, const chakra::Node& node, const char* name, Enum last) const {
    const std::string value = text(file, node, name);
    const std::optional<Enum> parsed = enum_named(value, last);
    if (!parsed) throw InputError(file.path, field(node, name), "'" + value + "' is not one simtrain writes");
    return *parsed;
  }
  int rank_in_range(const RankFile& file, const chakra::Node& node, const std::string& name) const {
    const int64_t rank = integer(file, node, name);
    if (rank < 0 || rank >= world_) throw InputError(file.path, field(node, name), "rank " + std::to_string(rank) + ", " + ranks_text());
    return static_cast<int>(rank);
  }
  std::string ranks_text() const {
    return "but there are traces of " + std::to_string(world_) + " ranks (" + prefix_ + ".{0.." +
           std::to_string(world_ - 1) + "}.et)";
  }

  // The groups file, or else each pg_name's ranks from the traces.
  void read_groups() {
    const std::string path = prefix_ + ".comm_groups.json";
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    if (std::filesystem::exists(path)) {
      result_.files.push_back(path);
      groups = read_chakra_comm_groups(path, world_, ranks_text());
    } else {
      std::map<std::string, std::vector<int>> members;  // pg_name -> ranks, in rank order
      for (int rank = 0; rank < world_; ++rank)
        for (const chakra::Node& node : files_[rank].nodes)
          if (node.type() == chakra::COMM_COLL_NODE && !runs_on_cpu(node) && collective_kind(integer(files_[rank], node, "comm_type"))) {
            std::vector<int>& ranks = members[text(files_[rank], node, "pg_name")];
            if (ranks.empty() || ranks.back() != rank) ranks.push_back(rank);
          }
      groups.assign(members.begin(), members.end());
    }
    for (auto& [name, ranks] : groups) group_of_name_[name] = add_group("pg" + name, ranks);
  }

  int add_group(const std::string& name, const std::vector<int>& ranks) {
    Group group;
    group.id = static_cast<int>(result_.program.groups.size());
    group.name = name;
    group.ranks = ranks;
    result_.program.groups.push_back(std::move(group));
    return result_.program.groups.back().id;
  }

  // The group a collective names; "0" or none is every rank, as in ASTRA-sim.
  int group_of(const RankFile& file, const chakra::Node& node, int rank) {
    std::string name = text(file, node, "pg_name");
    if (name.empty()) name = "0";
    auto found = group_of_name_.find(name);
    if (found == group_of_name_.end() && name == "0") {
      std::vector<int> every(world_);
      for (int r = 0; r < world_; ++r) every[r] = r;
      found = group_of_name_.emplace(name, add_group("pg0", every)).first;
    }
    if (found == group_of_name_.end())
      throw InputError(file.path, field(node, "pg_name"), "no group '" + name + "' in " + prefix_ + ".comm_groups.json");
    Group& group = result_.program.groups[found->second];
    if (std::find(group.ranks.begin(), group.ranks.end(), rank) == group.ranks.end())
      throw InputError(file.path, field(node, "pg_name"), "rank " + std::to_string(rank) + " is not in group '" + name + "'");
    return found->second;
  }

  int work_of(int64_t duration_micros, int64_t ops, int64_t tensor_bytes) {
    const auto key = std::make_tuple(duration_micros, ops, tensor_bytes);
    auto [it, added] = work_of_key_.try_emplace(key, static_cast<int>(result_.program.works.size()));
    if (added) {
      const double seconds = static_cast<double>(duration_micros) * 1e-6;
      result_.program.works.push_back({"recorded " + std::to_string(duration_micros) + " us", {}, seconds});
      result_.work_seconds.push_back(seconds);
    }
    return it->second;
  }

  // Pass 1: each node of `rank` becomes a task, a repeat of one, or is ignored.
  void classify(int rank) {
    const RankFile& file = files_[rank];
    rank_first_task_.push_back(pending_.size());
    auto& task_of = task_of_node_[rank];
    for (const chakra::Node& node : file.nodes) {
      if (task_of.count(node.id())) throw InputError(file.path, node_label(node), "a second node with this id");
      if (hinted_ && find_attribute(node.attr(), attribute::kRepeatOf)) {
        const uint64_t first = static_cast<uint64_t>(integer(file, node, attribute::kRepeatOf));
        const auto repeated = task_of.find(first);
        if (repeated == task_of.end() || repeated->second == kIgnored)
          throw InputError(file.path, field(node, attribute::kRepeatOf), "no collective node " + std::to_string(first) + " before it");
        ++pending_[repeated->second].task.count;
        task_of[node.id()] = repeated->second;
        continue;
      }
      const bool on_cpu = runs_on_cpu(node);
      std::optional<Task> task = on_cpu ? std::nullopt : task_of_node(file, node, rank);
      if (!task) {
        const std::string key = on_cpu ? type_name(node) + " on the CPU (is_cpu_op)"
                                : node.type() == chakra::COMM_COLL_NODE
                                    ? "COMM_COLL_NODE " + chakra::CollectiveCommType_Name(
                                                              static_cast<int>(integer(file, node, "comm_type")))
                                    : type_name(node);
        ++result_.ignored[key.back() == ' ' ? key + std::to_string(integer(file, node, "comm_type")) : key];
        task_of[node.id()] = kIgnored;
        ignored_nodes_[{rank, node.id()}] = &node;
        continue;
      }
      task_of[node.id()] = static_cast<int>(pending_.size());
      pending_.push_back({*task, &node});
    }
  }

  std::optional<Task> task_of_node(const RankFile& file, const chakra::Node& node, int rank) {
    Task task;
    task.rank = rank;
    switch (node.type()) {
      case chakra::COMP_NODE: {
        task.kind = hinted_ ? hint(file, node, attribute::kKind, TaskKind::ALLTOALL) : TaskKind::F;
        if (!is_compute(task.kind)) throw InputError(file.path, field(node, attribute::kKind), "not a compute kind, on a COMP_NODE");
        const int64_t ops = integer_or_zero(file, node, "num_ops");
        task.work = work_of(static_cast<int64_t>(node.duration_micros()), ops, integer_or_zero(file, node, "tensor_size"));
        result_.recorded_flops += static_cast<double>(ops);
        break;
      }
      case chakra::COMM_COLL_NODE: {
        const std::optional<TaskKind> kind = collective_kind(integer(file, node, "comm_type"));
        if (!kind) return std::nullopt;
        task.kind = *kind;
        task.group = group_of(file, node, rank);
        task.bytes = bytes_of_comm_size(task.kind, integer(file, node, "comm_size"),
                                        static_cast<int>(result_.program.groups[task.group].ranks.size()));
        task.stream = Stream::dp;
        task.dim = CommDim::dp;
        break;
      }
      case chakra::COMM_SEND_NODE:
      case chakra::COMM_RECV_NODE: {
        const bool send = node.type() == chakra::COMM_SEND_NODE;
        task.kind = send ? TaskKind::SEND : TaskKind::RECV;
        const int src = rank_in_range(file, node, "comm_src"), dst = rank_in_range(file, node, "comm_dst");
        if ((send ? src : dst) != rank)
          throw InputError(file.path, field(node, send ? "comm_src" : "comm_dst"),
                           std::to_string(send ? src : dst) + ", not this file's rank " + std::to_string(rank));
        task.peer = send ? dst : src;
        task.bytes = static_cast<double>(integer(file, node, "comm_size"));
        task.stream = Stream::p2p;
        task.dim = CommDim::pp;
        break;
      }
      default: return std::nullopt;
    }
    if (hinted_) {
      task.stream = hint(file, node, attribute::kStream, Stream::tp_overlap);
      if (!is_compute(task.kind)) task.dim = hint(file, node, attribute::kDim, CommDim::cp);
      task.joins_batch = find_attribute(node.attr(), attribute::kJoinsBatch) != nullptr;
    }
    if (task.group >= 0) result_.program.groups[task.group].dim = task.dim;
    return task;
  }

  // Each RECV to the SEND of the same (comm_src, comm_dst, comm_tag), of the same size.
  void match_transfers() {
    std::map<std::tuple<int, int, int64_t>, int> send_of;  // -> pending index
    for (size_t i = 0; i < pending_.size(); ++i) {
      const Pending& p = pending_[i];
      if (p.task.kind != TaskKind::SEND) continue;
      const RankFile& file = files_[p.task.rank];
      if (!send_of.emplace(std::make_tuple(p.task.rank, p.task.peer, integer(file, *p.node, "comm_tag")), int(i)).second)
        throw InputError(file.path, field(*p.node, "comm_tag"), "a second SEND to rank " + std::to_string(p.task.peer) + " with this tag");
    }
    for (Pending& p : pending_) {
      if (p.task.kind != TaskKind::RECV) continue;
      const RankFile& file = files_[p.task.rank];
      const int64_t tag = integer(file, *p.node, "comm_tag");
      const auto send = send_of.find({p.task.peer, p.task.rank, tag});
      if (send == send_of.end())
        throw InputError(file.path, field(*p.node, "comm_tag"),
                         "no SEND of tag " + std::to_string(tag) + " from rank " + std::to_string(p.task.peer) + " in " +
                             files_[p.task.peer].path);
      const Task& sent = pending_[send->second].task;
      if (sent.bytes != p.task.bytes)
        throw InputError(file.path, field(*p.node, "comm_size"),
                         std::to_string(int64_t(p.task.bytes)) + " bytes, but its SEND (" + files_[sent.rank].path + ", " +
                             node_label(*pending_[send->second].node) + ") sends " + std::to_string(int64_t(sent.bytes)));
      p.send = send->second;
      send_of.erase(send);
    }
    if (!send_of.empty()) {
      const Pending& p = pending_[send_of.begin()->second];
      throw InputError(files_[p.task.rank].path, field(*p.node, "comm_tag"),
                       "no RECV of it in " + files_[p.task.peer].path);
    }
  }

  // Pass 2: a task's dependencies (pending indices are the task ids): a
  // RECV's SEND first, then the tasks its nodes name, through ignored ones.
  std::vector<int32_t> dependencies(const Pending& p) {
    std::vector<int32_t> deps;
    if (p.send >= 0) deps.push_back(p.send);
    std::vector<int32_t> named;
    add_named(p.task.rank, *p.node, named);
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    const int self = static_cast<int>(&p - pending_.data());
    for (int32_t id : named)
      if (id != self && id != p.send) deps.push_back(id);
    return deps;
  }

  void add_named(int rank, const chakra::Node& node, std::vector<int32_t>& deps) {
    auto add = [&](uint64_t id, const char* name) {
      const auto found = task_of_node_[rank].find(id);
      if (found == task_of_node_[rank].end())
        throw InputError(files_[rank].path, field(node, name), "no node " + std::to_string(id) + " in this file");
      if (found->second != kIgnored) {
        if (std::string(name) == "data_deps" || !hinted_) deps.push_back(found->second);
        return;
      }
      const std::vector<int32_t>& through = through_ignored(rank, id);
      deps.insert(deps.end(), through.begin(), through.end());
    };
    for (uint64_t id : node.data_deps()) add(id, "data_deps");
    if (result_.from_pytorch) return;  // ctrl_deps: the call tree, which may name ops the converter left out
    for (uint64_t id : node.ctrl_deps()) add(id, "ctrl_deps");  // checked, and with hints the streams' order
  }

  // What an ignored node waits for, in tasks.
  const std::vector<int32_t>& through_ignored(int rank, uint64_t id) {
    const auto key = std::make_pair(rank, id);
    if (const auto done = through_.find(key); done != through_.end()) {
      if (!done->second) throw InputError(files_[rank].path, "node " + std::to_string(id), "its dependencies come back to it");
      return *done->second;
    }
    through_[key] = std::nullopt;  // in progress
    std::vector<int32_t> deps;
    add_named(rank, *ignored_nodes_.at(key), deps);
    return *(through_[key] = std::move(deps));
  }

  // The tp x dp x pp layout simtrain wrote, else each rank a stage of its own.
  void set_layout() {
    Program& program = result_.program;
    if (!hinted_) {
      program.pipeline_size = world_;
      for (int rank = 0; rank < world_; ++rank) program.coords.push_back({0, 0, rank});
      return;
    }
    const RankFile& first = files_.front();
    auto size = [&](const char* name) {
      const chakra::AttributeProto* a = find_attribute(first.metadata.attr(), name);
      const int64_t value = a && a->value_case() == chakra::AttributeProto::kInt64Val ? a->int64_val() : 0;
      if (value < 1 || world_ % value != 0)
        throw InputError(first.path, std::string("GlobalMetadata: ") + name, "not a divisor of the " + std::to_string(world_) + " ranks");
      return static_cast<int>(value);
    };
    program.tensor_size = size(attribute::kTensorSize);
    program.pipeline_size = size(attribute::kPipelineSize);
    const int replicas = world_ / (program.tensor_size * program.pipeline_size);
    if (replicas < 1) throw InputError(first.path, "GlobalMetadata", "a tp x pp layout larger than the " + std::to_string(world_) + " ranks");
    for (const RankFile& file : files_) {
      const chakra::AttributeProto* a = find_attribute(file.metadata.attr(), attribute::kRankCoord);
      RankCoord c{-1, -1, -1};
      if (a) std::istringstream(a->string_val()) >> c.tp >> c.dp >> c.pp;
      if (c.tp < 0 || c.tp >= program.tensor_size || c.dp < 0 || c.dp >= replicas || c.pp < 0 || c.pp >= program.pipeline_size)
        throw InputError(file.path, std::string("GlobalMetadata: ") + attribute::kRankCoord,
                         "missing, or not \"tp dp pp\" within the layout");
      program.coords.push_back(c);
    }
  }

  const std::string prefix_;
  std::vector<RankFile> files_;
  int world_ = 0;
  bool hinted_ = false;
  ChakraTraces result_;
  std::map<std::string, int> group_of_name_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int> work_of_key_;
  std::vector<Pending> pending_;
  std::vector<size_t> rank_first_task_;
  std::vector<std::unordered_map<uint64_t, int>> task_of_node_;  // by rank: node id -> pending index, or kIgnored
  std::map<std::pair<int, uint64_t>, std::optional<std::vector<int32_t>>> through_;  // empty: being resolved
  std::map<std::pair<int, uint64_t>, const chakra::Node*> ignored_nodes_;  // (rank, node id)
};

}  // namespace

ChakraTraces import_chakra(const std::string& prefix) { return Importer(prefix).run(); }

std::string ignored_text(const ChakraTraces& traces) {
  std::string text;
  for (const auto& [type, count] : traces.ignored)
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " node" + (count == 1 ? "" : "s") + " of type " + type;
  return text.empty() ? text : text + " ignored (no time; what waits for them waits for what they waited for)";
}

}  // namespace simtrain
