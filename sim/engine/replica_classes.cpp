#include "sim/engine/replica_classes.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace simtrain {

namespace {

constexpr uint32_t no_flow = UINT32_MAX;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

// Ordered: the sequence of values, not their multiset.
uint64_t combine(uint64_t hash, uint64_t value) { return mix(hash ^ mix(value)); }
uint64_t combine(uint64_t hash, double value) { return combine(hash, std::bit_cast<uint64_t>(value)); }
uint64_t combine(uint64_t hash, int value) { return combine(hash, static_cast<uint64_t>(static_cast<uint32_t>(value))); }

}  // namespace

ReplicaClasses::ReplicaClasses(const Program& program, const Fabric& fabric, const Lanes& lanes, const LaneFlows& lane_flows,
                               const std::vector<double>& link_bytes_per_second, const std::set<int>& altered_links,
                               const ReplayOptions& options)
    : prog_(program), fabric_(fabric), lanes_(lanes), flows_(lane_flows) {
  replicas_ = prog_.world_size / (prog_.tensor_size * prog_.pipeline_size);
  rank_at_.assign(prog_.world_size, -1);
  for (int r = 0; r < prog_.world_size; ++r) {
    const RankCoord& c = prog_.coords[r];
    rank_at_[(c.pp * replicas_ + c.dp) * prog_.tensor_size + c.tp] = r;
  }
  std::vector<uint64_t> keys = structure_signatures();
  for (const FailureEvent& e : options.failures)
    if (e.rank >= 0) keys[replica_of(e.rank)] = combine(keys[replica_of(e.rank)], replica_of(e.rank) + 1);
  if (options.full_replay) std::iota(keys.begin(), keys.end(), uint64_t{0});
  set_classes(keys);
  if (!options.full_replay) refine(link_bytes_per_second, altered_links);
  weigh_routes(link_bytes_per_second, altered_links, options.full_replay);
  representative_of_rank_.resize(prog_.world_size);
  for (int r = 0; r < prog_.world_size; ++r) {
    const RankCoord& c = prog_.coords[r];
    representative_of_rank_[r] = rank_at(c.tp, representatives_[class_of_replica_[c.dp]], c.pp);
  }
}

int ReplicaClasses::rank_at(int tp, int dp, int pp) const {
  return rank_at_[(pp * replicas_ + dp) * prog_.tensor_size + tp];
}

int ReplicaClasses::position_in_rank(int id) const {
  return id - prog_.rank_tasks[prog_.tasks[id].rank].front();  // a rank's ids are consecutive
}

int ReplicaClasses::stand_in(int id) const {
  const Task& task = prog_.tasks[id];
  const RankCoord& c = prog_.coords[task.rank];
  const int rep_replica = representatives_[class_of_replica_[c.dp]];
  const int on_rep = rep_replica == c.dp ? id : prog_.rank_tasks[rank_at(c.tp, rep_replica, c.pp)][position_in_rank(id)];
  return lanes_.representative_task(on_rep);
}

// What must be equal for two replicas to run alike whatever the network:
// every rank's task list (kinds, works, sizes, dependencies by place), each
// lane's speed and each lane task's flows (count, bytes, closed-form time).
std::vector<uint64_t> ReplicaClasses::structure_signatures() const {
  std::vector<uint64_t> signature(replicas_, 0);
  auto place = [&](int id) {  // a task's place in any replica: its rank's slot and its position there
    const RankCoord& c = prog_.coords[prog_.tasks[id].rank];
    return (static_cast<uint64_t>(c.pp * prog_.tensor_size + c.tp) << 32) | static_cast<uint32_t>(position_in_rank(id));
  };
  for (int r = 0; r < prog_.world_size; ++r) {
    uint64_t& h = signature[replica_of(r)];
    const RankCoord& c = prog_.coords[r];
    h = combine(combine(h, c.pp * prog_.tensor_size + c.tp), static_cast<int>(prog_.rank_tasks[r].size()));
    h = combine(h, lanes_.lane_of(r).speed);
    for (int id : prog_.rank_tasks[r]) {
      const Task& t = prog_.tasks[id];
      for (int v : {static_cast<int>(t.kind), static_cast<int>(t.stream), t.work, t.stage, t.microbatch, t.layer_begin,
                    t.layer_end, t.count, static_cast<int>(t.dim)})
        h = combine(h, v);
      h = combine(h, t.bytes);
      if (t.peer >= 0) h = combine(h, prog_.coords[t.peer].pp * prog_.tensor_size + prog_.coords[t.peer].tp);
      for (int dep : t.deps) {
        const int dep_replica = replica_of(prog_.tasks[dep].rank);
        h = combine(combine(h, place(dep)), dep_replica == c.dp ? -1 : dep_replica);  // another replica's task is unlike any
      }
      if (const LaneComm* comm = flows_.comm(id)) {
        h = combine(combine(h, static_cast<int>(comm->flow_count)), comm->later_steps_latency_seconds);
        if (comm->closed_form) h = combine(h, comm->closed_form->seconds);
        for (const Flow& f : flows_.flows(*comm)) h = combine(h, f.bytes);
      }
    }
  }
  return signature;
}

// Calls on_flow(flow, counterpart) for each flow `replica` drives, in a
// fixed order: counterpart is the flow at the same place of its class's
// representative (no_flow where the representative has none there).
template <typename OnFlow>
void ReplicaClasses::for_each_replica_flow(int replica, OnFlow&& on_flow) const {
  const int rep_replica = representatives_[class_of_replica_[replica]];
  for (int pp = 0; pp < prog_.pipeline_size; ++pp)
    for (int tp = 0; tp < prog_.tensor_size; ++tp) {
      const int rank = rank_at(tp, replica, pp);
      if (!lanes_.is_representative(rank)) continue;
      const std::vector<int>& mine = prog_.rank_tasks[rank];
      const std::vector<int>& reps = prog_.rank_tasks[rank_at(tp, rep_replica, pp)];
      for (size_t i = 0; i < mine.size(); ++i) {
        const LaneComm* comm = flows_.comm(mine[i]);
        if (!comm) continue;
        const LaneComm* rep_comm = i < reps.size() ? flows_.comm(reps[i]) : nullptr;
        for (uint32_t j = 0; j < comm->flow_count; ++j)
          on_flow(comm->first_flow + j, rep_comm && j < rep_comm->flow_count ? rep_comm->first_flow + j : no_flow);
      }
    }
}

// Each link's signature (the representative flows its traffic stands for,
// with their counts; its capacity and latency), then each flow's: the
// multiset of its links' signatures.
ReplicaClasses::Signatures ReplicaClasses::signatures(const std::vector<double>& link_bytes_per_second,
                                                      const std::set<int>& altered_links) const {
  const size_t flows = flows_.all().size();
  std::vector<uint32_t> counterpart(flows, no_flow);
  for (int m = 0; m < replicas_; ++m) for_each_replica_flow(m, [&](uint32_t f, uint32_t rep) { counterpart[f] = rep; });
  std::vector<uint64_t> stood_for(link_bytes_per_second.size(), 0), crossings(link_bytes_per_second.size(), 0);
  for (uint32_t f = 0; f < flows; ++f)
    for (int link : flows_.route(f)) {
      stood_for[link] += mix(counterpart[f] == no_flow ? ~uint64_t{f} : counterpart[f]);  // a sum: a multiset
      crossings[link] += 1;
    }
  Signatures s;
  s.link.resize(link_bytes_per_second.size());
  for (size_t l = 0; l < s.link.size(); ++l) {
    uint64_t h = combine(combine(stood_for[l], crossings[l]), link_bytes_per_second[l]);
    h = combine(h, fabric_.links()[l].latency_seconds);
    s.link[l] = combine(h, altered_links.count(static_cast<int>(l)) ? static_cast<int>(l) : -1);
  }
  s.flow.assign(flows, 0);
  for (uint32_t f = 0; f < flows; ++f)
    for (int link : flows_.route(f)) s.flow[f] += mix(s.link[link]);
  return s;
}

// Splits classes until every member's flows look like its representative's.
void ReplicaClasses::refine(const std::vector<double>& link_bytes_per_second, const std::set<int>& altered_links) {
  for (;;) {
    const std::vector<uint64_t> flow_signature = signatures(link_bytes_per_second, altered_links).flow;
    std::vector<uint64_t> keys(replicas_);
    for (int m = 0; m < replicas_; ++m) {
      uint64_t h = static_cast<uint64_t>(class_of_replica_[m]);
      for_each_replica_flow(m, [&](uint32_t f, uint32_t rep) { h = combine(combine(h, flow_signature[f]), rep == no_flow); });
      keys[m] = h;
    }
    const int before = count();
    set_classes(keys);
    if (count() == before) return;
  }
}

// Replicas with equal keys form a class; classes are numbered by their
// first replica, which represents them.
void ReplicaClasses::set_classes(const std::vector<uint64_t>& keys) {
  std::unordered_map<uint64_t, int> class_of_key;
  class_of_replica_.assign(replicas_, -1);
  representatives_.clear();
  class_size_.clear();
  for (int m = 0; m < replicas_; ++m) {
    auto [it, added] = class_of_key.try_emplace(keys[m], static_cast<int>(representatives_.size()));
    if (added) {
      representatives_.push_back(m);
      class_size_.push_back(0);
    }
    class_of_replica_[m] = it->second;
    class_size_[it->second] += 1;
  }
  is_representative_replica_.assign(replicas_, 0);
  for (int m : representatives_) is_representative_replica_[m] = 1;
}

std::span<const WeightedLink> ReplicaClasses::weighted_route(uint32_t flow) const {
  return {weighted_links_.data() + weighted_begin_[flow], weighted_begin_[flow + 1] - weighted_begin_[flow]};
}

// Each representative link stands for the links of its signature; a
// representative flow crosses it as often as the flows standing for it do.
void ReplicaClasses::weigh_routes(const std::vector<double>& link_bytes_per_second, const std::set<int>& altered_links,
                                  bool full_replay) {
  const size_t links = link_bytes_per_second.size();
  std::vector<int> canonical(links, -1);  // by link: the link whose constraint stands for it
  if (full_replay) {
    std::iota(canonical.begin(), canonical.end(), 0);
  } else {
    const Signatures s = signatures(link_bytes_per_second, altered_links);
    std::unordered_map<uint64_t, int> link_of_signature;
    for (int rep : representatives_)
      for_each_replica_flow(rep, [&](uint32_t f, uint32_t) {
        for (int link : flows_.route(f)) link_of_signature.try_emplace(s.link[link], link);
      });
    for (size_t l = 0; l < links; ++l)
      if (auto it = link_of_signature.find(s.link[l]); it != link_of_signature.end()) canonical[l] = it->second;
  }
  // A representative flow's route: its canonical links, each once, weighted below.
  const size_t flows = flows_.all().size();
  weighted_begin_.assign(flows + 1, 0);
  std::vector<std::vector<WeightedLink>> routes(flows);
  for (int rep : representatives_)
    for_each_replica_flow(rep, [&](uint32_t f, uint32_t) {
      for (int link : flows_.route(f)) {
        const int c = canonical[link];
        if (std::none_of(routes[f].begin(), routes[f].end(), [&](const WeightedLink& w) { return w.link == c; }))
          routes[f].push_back({c, 0});
      }
    });
  for (int m = 0; m < replicas_; ++m)
    for_each_replica_flow(m, [&](uint32_t f, uint32_t rep) {
      for (int link : flows_.route(f)) {
        if (canonical[link] != link) continue;
        auto w = std::find_if(routes[rep].begin(), routes[rep].end(), [&](const WeightedLink& x) { return x.link == link; });
        if (w == routes[rep].end()) throw std::logic_error("replica classes: a flow crosses a link its representative does not");
        w->repeats += 1;
      }
    });
  capacity_divisor_.assign(links, 0);
  for (const auto& route : routes)
    for (const WeightedLink& w : route) capacity_divisor_[w.link] = std::gcd(capacity_divisor_[w.link], w.repeats);
  for (int& divisor : capacity_divisor_) divisor = std::max(divisor, 1);
  for (size_t f = 0; f < flows; ++f) {
    for (WeightedLink w : routes[f]) weighted_links_.push_back({w.link, w.repeats / capacity_divisor_[w.link]});
    weighted_begin_[f + 1] = static_cast<uint32_t>(weighted_links_.size());
  }
}

}  // namespace simtrain
