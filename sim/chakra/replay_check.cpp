#include "sim/chakra/replay_check.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "sim/base/input_error.hpp"
#include "sim/chakra/chakra_file.hpp"

namespace simtrain {

namespace {

namespace chakra = ChakraProtoMsg;

enum class Role { compute, collective, send, recv, other };

struct NodeState {
  Role role = Role::other;
  int group = -1;           // collectives: index into Replay::groups_
  int64_t comm_type = 0;
  int64_t comm_size = 0;
  int transfer = -1;        // send, recv: index into Replay::transfers_
  int collective = -1;      // collectives once issued: index into Replay::collectives_
  std::vector<int> children;
  int waiting = 0;          // unfinished dependencies
  enum { pending, issued, done } state = pending;
};

struct RankState {
  ChakraRankFile file;
  std::vector<NodeState> nodes;
  std::unordered_map<uint64_t, int> index_of;  // node id -> index
  std::set<uint64_t> free;                     // dependency-free, not issued
  int computing = -1, communicating = -1;      // the node holding each resource
  long long done = 0;
  std::map<int, int> issued_of_group;          // group -> collectives issued
};

struct Group {
  std::string name;
  std::vector<int> ranks;
};

struct Collective {  // the k-th of a group
  int group = -1;
  std::vector<std::pair<int, int>> issued;  // (rank, node index)
};

struct Transfer {
  std::pair<int, int> send{-1, -1}, recv{-1, -1};  // (rank, node index)
  bool sent = false, recv_posted = false;
};

// The stand-in network time of a communication node (see replay_check.hpp).
double communication_ns(int64_t bytes) { return 1000.0 + static_cast<double>(bytes) / 100.0; }

class Replay {
public:
  explicit Replay(const std::string& prefix) : prefix_(prefix) {}

  ReplayCheck run() {
    read();
    for (int rank = 0; rank < int(ranks_.size()); ++rank) issue(rank);
    while (!events_.empty()) {
      const auto [time, sequence, rank, index] = events_.top();
      events_.pop();
      now_ = time;
      finish(rank, index);
    }
    ReplayCheck result{int(ranks_.size()), 0, now_ / 1000.0};
    for (const RankState& r : ranks_) result.nodes += r.done;
    for (const RankState& r : ranks_)
      if (r.done < static_cast<long long>(r.nodes.size())) throw InputError(files_text(), "", deadlock_text());
    return result;
  }

private:
  std::string files_text() const { return prefix_ + ".{0.." + std::to_string(ranks_.size() - 1) + "}.et"; }
  const chakra::Node& node(int rank, int index) const { return ranks_[rank].file.nodes[index]; }
  std::string label(int rank, int index) const { return chakra_node_label(node(rank, index)); }

  int64_t integer(int rank, int index, const std::string& name) const {
    return chakra_integer_attribute(ranks_[rank].file, node(rank, index), name);
  }

  void read() {
    for (ChakraRankFile& file : read_chakra_rank_files(prefix_, prefix_))
      ranks_.push_back({std::move(file), {}, {}, {}, -1, -1, 0, {}});
    read_groups();
    for (int rank = 0; rank < int(ranks_.size()); ++rank) read_nodes(rank);
    match_transfers();
  }

  void read_groups() {
    const std::string path = prefix_ + ".comm_groups.json";
    if (!std::filesystem::exists(path)) return;
    const int ranks = int(ranks_.size());
    for (auto& [name, members] : read_chakra_comm_groups(path, ranks, "but there are traces of " + std::to_string(ranks) + " ranks")) {
      group_of_name_[name] = int(groups_.size());
      groups_.push_back(Group{name, std::move(members)});
    }
  }

  int group_of(int rank, int index) {
    const chakra::AttributeProto* a = find_chakra_attribute(node(rank, index).attr(), "pg_name");
    const std::string name = a ? a->string_val() : "";
    if (const auto found = group_of_name_.find(name); found != group_of_name_.end()) return found->second;
    if (!name.empty())
      throw InputError(ranks_[rank].file.path, label(rank, index) + ": pg_name",
                       "no group '" + name + "' in " + prefix_ + ".comm_groups.json");
    Group every{"", {}};  // no pg_name: every rank, as ASTRA-sim's null communicator group
    for (int r = 0; r < int(ranks_.size()); ++r) every.ranks.push_back(r);
    group_of_name_[""] = int(groups_.size());
    groups_.push_back(std::move(every));
    return int(groups_.size()) - 1;
  }

  void read_nodes(int rank) {
    RankState& r = ranks_[rank];
    r.nodes.resize(r.file.nodes.size());
    for (int i = 0; i < int(r.file.nodes.size()); ++i)
      if (!r.index_of.emplace(r.file.nodes[i].id(), i).second)
        throw InputError(r.file.path, label(rank, i), "a second node with this id");
    for (int i = 0; i < int(r.file.nodes.size()); ++i) {
      const chakra::Node& n = r.file.nodes[i];
      NodeState& s = r.nodes[i];
      switch (n.type()) {
        case chakra::COMP_NODE: s.role = Role::compute; break;
        case chakra::COMM_COLL_NODE:
          s.role = Role::collective;
          s.group = group_of(rank, i);
          s.comm_type = integer(rank, i, "comm_type");
          s.comm_size = integer(rank, i, "comm_size");
          break;
        case chakra::COMM_SEND_NODE:
        case chakra::COMM_RECV_NODE: {
          const bool send = n.type() == chakra::COMM_SEND_NODE;
          s.role = send ? Role::send : Role::recv;
          s.comm_size = integer(rank, i, "comm_size");
          const auto key = std::make_tuple(integer(rank, i, "comm_src"), integer(rank, i, "comm_dst"), integer(rank, i, "comm_tag"));
          auto [it, added] = transfer_of_key_.try_emplace(key, int(transfers_.size()));
          if (added) transfers_.emplace_back();
          std::pair<int, int>& side = send ? transfers_[it->second].send : transfers_[it->second].recv;
          if (side.first >= 0)
            throw InputError(r.file.path, label(rank, i) + ": comm_tag",
                             std::string("a second ") + (send ? "send" : "receive") + " of this source, destination and tag");
          side = {rank, i};
          s.transfer = it->second;
          break;
        }
        default: s.role = Role::other;
      }
      std::set<uint64_t> parents(n.data_deps().begin(), n.data_deps().end());
      parents.insert(n.ctrl_deps().begin(), n.ctrl_deps().end());
      for (const uint64_t parent : parents) {
        const auto found = r.index_of.find(parent);
        if (found == r.index_of.end())
          throw InputError(r.file.path, label(rank, i), "waits for node " + std::to_string(parent) + ", not in this file");
        r.nodes[found->second].children.push_back(i);
        ++s.waiting;
      }
    }
    for (int i = 0; i < int(r.nodes.size()); ++i)
      if (r.nodes[i].waiting == 0) r.free.insert(r.file.nodes[i].id());
  }

  void match_transfers() {
    for (const Transfer& t : transfers_) {
      const auto [rank, index] = t.send.first >= 0 ? t.send : t.recv;
      const std::string path = ranks_[rank].file.path;
      if (t.send.first < 0 || t.recv.first < 0)
        throw InputError(path, label(rank, index) + ": comm_tag",
                         std::string("no ") + (t.send.first < 0 ? "send" : "receive") + " matches it");
      const int64_t sent = ranks_[t.send.first].nodes[t.send.second].comm_size;
      const int64_t received = ranks_[t.recv.first].nodes[t.recv.second].comm_size;
      if (sent != received)  // ASTRA-sim matches them by size too (CallbackTracker.cc:29): they would never meet
        throw InputError(ranks_[t.recv.first].file.path, label(t.recv.first, t.recv.second) + ": comm_size",
                         std::to_string(received) + " bytes, but its send (" + ranks_[t.send.first].file.path + ", " +
                             label(t.send.first, t.send.second) + ") sends " + std::to_string(sent));
    }
  }

  void schedule(double at_ns, int rank, int index) { events_.push({at_ns, sequence_++, rank, index}); }

  // Workload::issue_dep_free_nodes: the dependency-free nodes in ascending id, each if its resource is free.
  void issue(int rank) {
    RankState& r = ranks_[rank];
    const std::vector<uint64_t> free(r.free.begin(), r.free.end());
    for (const uint64_t id : free) {
      const int i = r.index_of.at(id);
      NodeState& s = r.nodes[i];
      if (s.role == Role::compute && r.computing >= 0) continue;
      if ((s.role == Role::collective || s.role == Role::send) && r.communicating >= 0) continue;
      r.free.erase(id);
      s.state = NodeState::issued;
      switch (s.role) {
        case Role::compute:
          r.computing = i;
          schedule(now_ + std::max<double>(1.0, double(r.file.nodes[i].duration_micros()) * 1000.0), rank, i);
          break;
        case Role::collective: r.communicating = i; arrive(rank, i); break;
        case Role::send: r.communicating = i; schedule(now_ + communication_ns(s.comm_size), rank, i); break;
        case Role::recv:
          if (transfers_[s.transfer].sent) schedule(now_, rank, i);
          else transfers_[s.transfer].recv_posted = true;
          break;
        case Role::other: schedule(now_, rank, i); break;
      }
    }
  }

  // A collective issued on `rank`: the k-th of its group there, which completes once every member has issued its k-th.
  void arrive(int rank, int index) {
    NodeState& s = ranks_[rank].nodes[index];
    const Group& group = groups_[s.group];
    if (std::find(group.ranks.begin(), group.ranks.end(), rank) == group.ranks.end())
      throw InputError(ranks_[rank].file.path, label(rank, index) + ": pg_name",
                       "rank " + std::to_string(rank) + " is not in group '" + group.name + "'");
    const int k = ranks_[rank].issued_of_group[s.group]++;
    auto [it, added] = collective_of_.try_emplace({s.group, k}, int(collectives_.size()));
    if (added) collectives_.push_back({s.group, {}});
    Collective& c = collectives_[it->second];
    s.collective = it->second;
    if (!c.issued.empty()) {
      const auto [first_rank, first_index] = c.issued.front();
      const NodeState& first = ranks_[first_rank].nodes[first_index];
      if (first.comm_type != s.comm_type || first.comm_size != s.comm_size)
        throw InputError(ranks_[rank].file.path, label(rank, index),
                         "collective " + std::to_string(k + 1) + " of group '" + group.name + "' here is comm_type " +
                             std::to_string(s.comm_type) + " of comm_size " + std::to_string(s.comm_size) +
                             ", but on rank " + std::to_string(first_rank) + " (" + label(first_rank, first_index) +
                             ") comm_type " + std::to_string(first.comm_type) + " of comm_size " +
                             std::to_string(first.comm_size));
    }
    c.issued.push_back({rank, index});
    if (c.issued.size() < group.ranks.size()) return;
    for (const auto [member, member_index] : c.issued) schedule(now_ + communication_ns(s.comm_size), member, member_index);
  }

  void finish(int rank, int index) {
    RankState& r = ranks_[rank];
    NodeState& s = r.nodes[index];
    s.state = NodeState::done;
    ++r.done;
    if (r.computing == index) r.computing = -1;
    if (r.communicating == index) r.communicating = -1;
    for (const int child : s.children)
      if (--r.nodes[child].waiting == 0) r.free.insert(r.file.nodes[child].id());
    if (s.role == Role::send) {
      Transfer& t = transfers_[s.transfer];
      t.sent = true;
      if (t.recv_posted) schedule(now_, t.recv.first, t.recv.second);
    }
    issue(rank);
  }

  // ---- a deadlock, said as the ranks waiting on each other ----

  struct Wait {
    std::string clause;
    std::vector<int> on;  // the ranks it waits for
  };

  Wait wait_of(int rank) const {
    const RankState& r = ranks_[rank];
    const std::string who = "rank " + std::to_string(rank);
    if (r.communicating >= 0 && r.nodes[r.communicating].role == Role::collective) {
      const NodeState& s = r.nodes[r.communicating];
      const Collective& c = collectives_[s.collective];
      std::vector<int> missing;
      for (const int member : groups_[s.group].ranks)
        if (std::none_of(c.issued.begin(), c.issued.end(), [&](auto issued) { return issued.first == member; }))
          missing.push_back(member);
      std::string clause = who + " holds " + label(rank, r.communicating) + " until " + ranks_text(missing) + (missing.size() == 1 ? " issues it" : " issue it");
      for (const uint64_t id : r.free) {  // what it holds back
        const int i = r.index_of.at(id);
        if (r.nodes[i].role == Role::collective || r.nodes[i].role == Role::send) {
          clause += ", " + label(rank, i) + " waiting behind it";
          break;
        }
      }
      return {clause, missing};
    }
    for (int i = 0; i < int(r.nodes.size()); ++i) {
      const NodeState& s = r.nodes[i];
      if (s.role != Role::recv || s.state != NodeState::issued) continue;
      const auto [from, send] = transfers_[s.transfer].send;
      const bool issued = ranks_[from].nodes[send].state != NodeState::pending;
      return {who + " waits in " + label(rank, i) + " for rank " + std::to_string(from) + "'s " + label(from, send) +
                  (issued ? "" : ", not issued"),
              {from}};
    }
    for (int i = 0; i < int(r.nodes.size()); ++i)
      if (r.nodes[i].state == NodeState::pending)
        return {who + ": " + label(rank, i) + " waits for nodes that never finish (its dependencies form a cycle)", {}};
    return {who + " waits", {}};
  }

  static std::string ranks_text(const std::vector<int>& ranks) {
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size() && i < 4; ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
    return ranks.size() > 4 ? text + " ... (" + std::to_string(ranks.size()) + ")" : text;
  }

  std::string deadlock_text() const {
    int stuck = 0, first = -1;
    long long never_run = 0;
    for (int rank = 0; rank < int(ranks_.size()); ++rank) {
      const long long left = static_cast<long long>(ranks_[rank].nodes.size()) - ranks_[rank].done;
      if (left == 0) continue;
      ++stuck, never_run += left;
      if (first < 0) first = rank;
    }
    // From the first stuck rank, along what each waits for, until a rank comes back: the cycle.
    std::vector<int> path;
    std::map<int, size_t> seen;
    for (int rank = first; rank >= 0 && !seen.count(rank);) {
      seen[rank] = path.size();
      path.push_back(rank);
      const Wait wait = wait_of(rank);
      rank = wait.on.empty() ? -1 : wait.on.front();
      if (rank >= 0 && seen.count(rank)) path.erase(path.begin(), path.begin() + long(seen[rank]));
    }
    std::string clauses;
    for (const int rank : path) clauses += (clauses.empty() ? "" : "; ") + wait_of(rank).clause;
    return "deadlock under ASTRA-sim's rules (one communication node in flight per rank, issued in ascending id): " +
           clauses + " (" + std::to_string(stuck) + " of " + std::to_string(ranks_.size()) + " ranks stuck, " +
           std::to_string(never_run) + " nodes never finish)";
  }

  const std::string prefix_;
  std::vector<RankState> ranks_;
  std::vector<Group> groups_;
  std::map<std::string, int> group_of_name_;
  std::vector<Transfer> transfers_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int> transfer_of_key_;
  std::vector<Collective> collectives_;
  std::map<std::pair<int, int>, int> collective_of_;  // (group, k) -> index
  using Event = std::tuple<double, long long, int, int>;  // time ns, sequence, rank, node index
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  long long sequence_ = 0;
  double now_ = 0;
};

}  // namespace

ReplayCheck check_chakra_replay(const std::string& prefix) { return Replay(prefix).run(); }

}  // namespace simtrain
