#include "sim/engine/replica_classes.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace simtrain {

namespace {

constexpr uint32_t no_flow = UINT32_MAX;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

// How many different values: an open-addressing set in `slots` (0 marks a
// free slot, so 0 itself is counted apart), which the caller keeps from one
// round to the next. It starts small and doubles at half full: millions of
// flows fall in far fewer colours, and a table sized for every flow costs
// more to clear than to fill.
size_t count_distinct(const std::vector<uint64_t>& values, std::vector<uint64_t>& slots) {
  slots.assign(std::min<size_t>(std::bit_ceil(2 * values.size() + 2), 1024), 0);
  size_t count = 0;
  auto insert = [&](uint64_t v) {
    const size_t mask = slots.size() - 1;
    size_t i = mix(v) & mask;
    while (slots[i] != 0 && slots[i] != v) i = (i + 1) & mask;
    if (slots[i] != 0) return false;
    slots[i] = v;
    return true;
  };
  // Each insert's slot is a cache miss: the slot some values ahead is fetched meanwhile.
  constexpr size_t kAhead = 16;
  bool zero = false;
  for (size_t n = 0; n < values.size(); ++n) {
    if (n + kAhead < values.size()) __builtin_prefetch(&slots[mix(values[n + kAhead]) & (slots.size() - 1)]);
    const uint64_t v = values[n];
    if (v == 0) {
      zero = true;
      continue;
    }
    if (!insert(v)) continue;
    if (++count * 2 <= slots.size()) continue;
    std::vector<uint64_t> held;
    for (uint64_t held_value : slots)
      if (held_value != 0) held.push_back(held_value);
    slots.assign(2 * slots.size(), 0);
    for (uint64_t held_value : held) insert(held_value);
  }
  return count + zero;
}

// Ordered: the sequence of values, not their multiset.
uint64_t combine(uint64_t hash, uint64_t value) { return mix(hash ^ mix(value)); }
uint64_t combine(uint64_t hash, double value) { return combine(hash, std::bit_cast<uint64_t>(value)); }
uint64_t combine(uint64_t hash, int value) {
  return combine(hash, static_cast<uint64_t>(static_cast<uint32_t>(value)));
}

// Items numbered by their keys, in the order each key first appears: each
// item's number, and whether it is the first item of its number.
struct KeyNumbering {
  std::vector<uint32_t> of_item;
  std::vector<char> first;
  uint32_t count = 0;
};
KeyNumbering number_by_key(const std::vector<uint64_t>& keys) {
  KeyNumbering numbering{std::vector<uint32_t>(keys.size()), std::vector<char>(keys.size(), 0), 0};
  std::unordered_map<uint64_t, uint32_t> number_of_key;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto [it, added] = number_of_key.try_emplace(keys[i], numbering.count);
    numbering.count += added;
    numbering.first[i] = added;
    numbering.of_item[i] = it->second;
  }
  return numbering;
}

}  // namespace

ReplicaClasses::ReplicaClasses(const Program& program, const Fabric& fabric, const Lanes& lanes,
                               const LaneFlows& lane_flows, const std::vector<double>& link_bytes_per_second,
                               const std::set<int>& altered_links, const ReplayOptions& options)
    : prog_(program), fabric_(fabric), lanes_(lanes), flows_(lane_flows), max_rounds_(std::max(1, options.max_refinement_rounds)) {
  find_replicas();
  structure_ = structure_signatures();
  spans_replicas_.assign(prog_.groups.size(), 0);
  for (const Group& g : prog_.groups)
    for (int r : g.ranks) spans_replicas_[g.id] |= replica_of(r) != replica_of(g.ranks.front());
  std::vector<uint64_t> keys = structure_;
  for (int r = 0; r < prog_.world_size; ++r)
    keys[replica_of(r)] = combine(keys[replica_of(r)], lanes_.lane_of(r).speed);
  for (const FailureEvent& e : options.failures)
    if (e.rank >= 0) keys[replica_of(e.rank)] = combine(keys[replica_of(e.rank)], replica_of(e.rank) + 1);
  if (options.full_replay) std::iota(keys.begin(), keys.end(), uint64_t{0});
  set_classes(keys);
  binding_.assign(link_bytes_per_second.size(), 1);
  if (!options.full_replay) binding_ = links_that_can_bind(link_bytes_per_second, altered_links);
  weigh_routes(options.full_replay ? distinct_colours(link_bytes_per_second.size())
                                   : refine(link_bytes_per_second, altered_links));
  representative_of_rank_.resize(prog_.world_size);
  for (int r = 0; r < prog_.world_size; ++r)
    representative_of_rank_[r] =
        ranks_of_replica_[representatives_[class_of_replica_[replica_of(r)]]][slot_of_rank_[r]];
}

// Replicas by the Program's coordinates, each rank at its slot (pp, tp);
// one replica of every rank where they do not describe a tp x pp x dp layout
// (a Program written by hand).
void ReplicaClasses::find_replicas() {
  const int slots = prog_.tensor_size * prog_.pipeline_size;
  replicas_ = slots > 0 && prog_.world_size % slots == 0 ? prog_.world_size / slots : 0;
  bool layout = replicas_ > 0 && prog_.coords.size() == static_cast<size_t>(prog_.world_size);
  ranks_of_replica_.assign(std::max(replicas_, 1), std::vector<int>(slots, -1));
  slot_of_rank_.assign(prog_.world_size, -1);
  replica_of_rank_.assign(prog_.world_size, 0);
  for (int r = 0; r < prog_.world_size && layout; ++r) {
    const RankCoord& c = prog_.coords[r];
    layout = c.tp >= 0 && c.tp < prog_.tensor_size && c.pp >= 0 && c.pp < prog_.pipeline_size && c.dp >= 0 &&
             c.dp < replicas_ && ranks_of_replica_[c.dp][c.pp * prog_.tensor_size + c.tp] < 0;
    if (!layout) break;
    ranks_of_replica_[c.dp][c.pp * prog_.tensor_size + c.tp] = r;
    slot_of_rank_[r] = c.pp * prog_.tensor_size + c.tp;
    replica_of_rank_[r] = c.dp;
  }
  if (layout) return;
  replicas_ = 1;
  ranks_of_replica_.assign(1, {});
  for (int r = 0; r < prog_.world_size; ++r) {
    ranks_of_replica_[0].push_back(r);
    slot_of_rank_[r] = r;
    replica_of_rank_[r] = 0;
  }
}

int ReplicaClasses::stand_in(int id) const {
  const int rank = prog_.tasks.rank_of(id);
  const int rep_replica = representatives_[class_of_replica_[replica_of(rank)]];
  const int on_rep = rep_replica == replica_of(rank) ? id
                                                     : prog_.rank_tasks(ranks_of_replica_[rep_replica][slot_of_rank_[rank]])
                                                           [prog_.tasks.position_in_rank(id)];
  return lanes_.representative_task(on_rep);
}

// What must be equal, besides their GPUs' speeds, for two replicas to run
// alike whatever the network: every lane's task list (each task's fields,
// where its peer and its dependencies are: slot, and whether in another
// replica, which) and each of its tasks' flows (count, bytes, closed-form
// time). A rank reading another's stored list (TaskTable::
// source_rank) holds the same tasks with peers and dependencies moved by
// their distance from it; where each distance lands in the same slot and
// replica relation from both, the tasks hash alike, so they are hashed once
// per stored list (a 3,072-GPU job's 384 lane lists are 64 stored ones).
std::vector<uint64_t> ReplicaClasses::structure_signatures() const {
  struct StoredList {
    uint64_t tasks_hash = 0;
    std::vector<int> peer_distances, dep_distances;
  };
  std::unordered_map<int, StoredList> stored_lists;  // by source rank
  const auto peer_value = [&](int peer) { return peer < prog_.world_size ? slot_of_rank_[peer] : peer; };
  const auto dep_value = [&](int rank, int dep_rank) {  // a task of another replica is unlike any
    const int other_replica = replica_of(dep_rank) == replica_of(rank) ? -1 : replica_of(dep_rank);
    return combine(uint64_t(slot_of_rank_[dep_rank]), other_replica);
  };
  const auto hash_tasks = [&](int r, StoredList* distances) {
    uint64_t h = 0;
    std::set<int> peer_distances, dep_distances;  // filled for `distances` only
    for (int id : prog_.rank_tasks(r)) {
      const Task& t = prog_.tasks[id];
      for (int v : {static_cast<int>(t.kind), static_cast<int>(t.stream), t.work, t.stage, t.microbatch, t.layer_begin,
                    t.layer_end, t.count, static_cast<int>(t.dim), static_cast<int>(t.joins_batch)})
        h = combine(h, v);
      h = combine(h, t.bytes);
      if (t.peer >= 0) {
        h = combine(h, peer_value(t.peer));
        if (distances) peer_distances.insert(t.peer - r);
      }
      for (int dep : prog_.deps(t)) {
        const int dep_rank = prog_.tasks.rank_of(dep);
        h = combine(combine(h, dep_value(r, dep_rank)), prog_.tasks.position_in_rank(dep));
        if (distances) dep_distances.insert(dep_rank - r);
      }
    }
    if (distances) {
      distances->peer_distances.assign(peer_distances.begin(), peer_distances.end());
      distances->dep_distances.assign(dep_distances.begin(), dep_distances.end());
    }
    return h;
  };
  const auto lands_alike = [&](const StoredList& list, int source, int r) {
    const auto inside = [&](int rank) { return rank >= 0 && rank < prog_.world_size; };
    for (int d : list.peer_distances)
      if (!inside(r + d) || peer_value(source + d) != peer_value(r + d)) return false;
    for (int d : list.dep_distances)
      if (!inside(r + d) || dep_value(source, source + d) != dep_value(r, r + d)) return false;
    return true;
  };
  std::vector<uint64_t> signature(replicas_, 0);
  for (int r = 0; r < prog_.world_size; ++r) {
    if (!lanes_.is_representative(r)) continue;  // the lane's other ranks mirror it
    const int source = prog_.tasks.source_rank(r);
    auto [list, added] = stored_lists.try_emplace(source);
    if (added) list->second.tasks_hash = hash_tasks(source, &list->second);
    const uint64_t tasks_hash = lands_alike(list->second, source, r) ? list->second.tasks_hash : hash_tasks(r, nullptr);
    uint64_t& h = signature[replica_of(r)];
    h = combine(combine(combine(h, slot_of_rank_[r]), static_cast<int>(prog_.rank_tasks(r).size())), tasks_hash);
    for (uint32_t c : flows_.comms_of_rank(r)) {
      const LaneComm& comm = flows_.comm_at(c);
      h = combine(combine(combine(h, static_cast<int>(comm.position)), static_cast<int>(comm.flow_count)),
                  comm.later_steps_latency_seconds);
      if (comm.closed_form) h = combine(h, comm.closed_form->seconds);
      for (const LaneFlow& f : flows_.flows(comm)) h = combine(h, f.bytes);
    }
  }
  return signature;
}

// Calls on_comm(comm, counterpart) for each lane task of `replica` with
// network work, in a fixed order: counterpart is the work at the same place
// of its class's representative (null where it has none there).
template <typename OnComm>
void ReplicaClasses::for_each_replica_comm(int replica, OnComm&& on_comm) const {
  const int rep_replica = representatives_[class_of_replica_[replica]];
  for (size_t slot = 0; slot < ranks_of_replica_[replica].size(); ++slot) {
    const std::span<const uint32_t> reps = flows_.comms_of_rank(ranks_of_replica_[rep_replica][slot]);
    size_t r = 0;
    for (uint32_t c : flows_.comms_of_rank(ranks_of_replica_[replica][slot])) {
      const LaneComm& comm = flows_.comm_at(c);
      while (r < reps.size() && flows_.comm_at(reps[r]).position < comm.position) ++r;
      on_comm(comm, r < reps.size() && flows_.comm_at(reps[r]).position == comm.position ? &flows_.comm_at(reps[r])
                                                                                          : nullptr);
    }
  }
}

// Calls on_flow(flow, counterpart) for each flow `replica` drives, in a
// fixed order: counterpart is the flow at the same place of its class's
// representative (no_flow where the representative has none there).
template <typename OnFlow>
void ReplicaClasses::for_each_replica_flow(int replica, OnFlow&& on_flow) const {
  for_each_replica_comm(replica, [&](const LaneComm& comm, const LaneComm* rep_comm) {
    for (uint32_t j = 0; j < comm.flow_count; ++j)
      on_flow(comm.first_flow + j, rep_comm && j < rep_comm->flow_count ? rep_comm->first_flow + j : no_flow);
  });
}

// A link can bind a flow only if it may carry more than it can. Every flow
// over a link enters the fabric over the first link of its route and leaves
// it over the last, which carry at most their capacities: a link at least as
// wide as all the first links (or all the last links) of the routes across
// it never limits a flow (a fat tree's leaf and pod uplinks without
// oversubscription), and leaving it out of the max-min sharing changes no
// rate. First and last links always count, as do degraded or failing ones.
std::vector<char> ReplicaClasses::links_that_can_bind(const std::vector<double>& link_bytes_per_second,
                                                     const std::set<int>& altered_links) const {
  const size_t links = link_bytes_per_second.size();
  std::vector<char> binding(links, 0);
  std::unordered_set<uint64_t> paths;                   // (src, dst) pairs routed
  std::unordered_set<uint64_t> entries, exits;          // (first or last link, link) pairs counted
  std::vector<double> entering(links, 0), leaving(links, 0);  // capacity of the first / last links across each
  auto pair = [](uint64_t a, uint64_t b) { return (a << 32) | b; };
  for (uint32_t f = 0; f < flows_.all().size(); ++f) {
    const LaneFlow& flow = flows_.all()[f];
    const std::span<const int> route = flows_.route(f);
    if (route.empty() || !paths.insert(pair(static_cast<uint32_t>(flow.src), static_cast<uint32_t>(flow.dst))).second)
      continue;
    binding[route.front()] = binding[route.back()] = 1;
    for (int link : route.subspan(1, route.size() - 1)) {
      if (entries.insert(pair(route.front(), link)).second) entering[link] += link_bytes_per_second[route.front()];
      if (exits.insert(pair(route.back(), link)).second) leaving[link] += link_bytes_per_second[route.back()];
    }
  }
  for (size_t l = 0; l < links; ++l)
    binding[l] = binding[l] || altered_links.count(static_cast<int>(l)) ||
                 link_bytes_per_second[l] < std::min(entering[l], leaving[l]);
  return binding;
}

// Flows that start together, whatever the network: those at one place of
// the replicas of a class, and, across classes, those at one place of a
// collective whose group spans replicas (its barrier releases them at once).
ReplicaClasses::Components ReplicaClasses::starting_together() const {
  const size_t flows = flows_.all().size();
  std::vector<uint32_t> parent(flows);
  std::iota(parent.begin(), parent.end(), 0u);
  auto root = [&](uint32_t f) {
    while (parent[f] != f) f = parent[f] = parent[parent[f]];
    return f;
  };
  auto join = [&](uint32_t a, uint32_t b) {  // a root is its component's first flow: parent[f] <= f
    const uint32_t ra = root(a), rb = root(b);
    parent[std::max(ra, rb)] = std::min(ra, rb);
  };
  // The flows of two works at one place, pairwise.
  auto join_works = [&](const LaneComm& a, const LaneComm& b) {
    for (uint32_t j = 0; j < std::min(a.flow_count, b.flow_count); ++j) join(a.first_flow + j, b.first_flow + j);
  };
  // A work's flows start together; those of the same bytes are alike.
  auto join_alike_flows = [&](const LaneComm& comm) {
    std::unordered_map<double, uint32_t> first_of_bytes;
    for (uint32_t f = comm.first_flow; f < comm.first_flow + comm.flow_count; ++f)
      if (auto [it, added] = first_of_bytes.try_emplace(flows_.all()[f].bytes, f); !added) join(f, it->second);
  };
  std::unordered_map<uint64_t, const LaneComm*> first_at_place;  // by (structure, barrier group, position)
  for (int m = 0; m < replicas_; ++m)
    for_each_replica_comm(m, [&](const LaneComm& comm, const LaneComm* counterpart) {
      join_alike_flows(comm);
      if (counterpart) join_works(comm, *counterpart);
      if (comm.group < 0 || !spans_replicas_[comm.group]) return;
      const uint64_t place = combine(combine(structure_[m], comm.group), static_cast<int>(comm.position));
      if (auto [it, added] = first_at_place.try_emplace(place, &comm); !added) join_works(comm, *it->second);
    });
  // In place, each flow's component: its root's number, roots numbered in
  // order (a root comes first in its component, so it is numbered before
  // its other flows read it).
  for (uint32_t f = 0; f < flows; ++f) parent[f] = root(f);
  uint32_t count = 0;
  for (uint32_t f = 0; f < flows; ++f) parent[f] = parent[f] == f ? count++ : parent[parent[f]];
  return {std::move(parent), count};
}

uint64_t ReplicaClasses::flow_colour(const Colours& colours, uint32_t flow) const {
  return combine(colours.route[flows_.route_index(flow)], uint64_t{colours.components.of_flow[flow]});
}

// Colour refinement of flows and links from `start`: a link's colour
// is its capacity, latency (a degraded or failing link is unlike any other)
// and the multiset of the colours of the flows crossing it; a flow's, its
// previous colour and the multiset of its links' colours; until the number
// of colours stops growing, or for max_rounds_. The flow colours
// returned part the flows as those the link colours were made of (the same
// colours where refinement stopped before settling, the same classes under
// new names where it settled), so that every link of a colour carries flows
// of the same colours either way.
//
// A flow's colour after k rounds is its component's and the sequence of
// multisets of link colours along its route, by round: its route's history
// (Colours::route). Components with the same multiset of routes are alike:
// swapping two of them, flow for flow of the same route, changes no link's
// multiset of colours, so both are coloured alike and each link carries as
// many flows of each route history from one as from the other. Refinement
// therefore runs on one component of each such kind, its flows counted as
// many times as the kind has components in the link multisets; its colours
// part the links as the whole job's would, and the number of colours grows
// exactly when the whole job's does.
ReplicaClasses::Refined ReplicaClasses::refine_colours(Components start,
                                                       const std::vector<double>& link_bytes_per_second,
                                                       const std::set<int>& altered_links) const {
  Refined refined;
  Colours& c = refined.colours;
  c.kinds = kinds(start);
  const Kinds& alike = c.kinds;
  const size_t links = link_bytes_per_second.size();
  std::vector<uint64_t> link_base(links);
  for (size_t l = 0; l < links; ++l)
    link_base[l] = combine(combine(combine(uint64_t{0}, link_bytes_per_second[l]), fabric_.links()[l].latency_seconds),
                           altered_links.count(static_cast<int>(l)) ? static_cast<int>(l) : -1);
  c.route.assign(flows_.route_count(), 0);
  const std::vector<uint32_t>& kept_route = alike.kept_route;
  std::vector<uint64_t> kept_colour(kept_route.size());
  const auto colour_kept = [&] {
    for (size_t k = 0; k < kept_route.size(); ++k)
      kept_colour[k] = combine(c.route[kept_route[k]], static_cast<int>(alike.kept_kind[k]));
  };
  colour_kept();
  std::vector<uint64_t> slots;
  size_t flow_colours = alike.components.size();
  for (int round = 0;; ++round) {
    c.link = link_base;
    for (size_t k = 0; k < kept_route.size(); ++k) {
      const uint64_t seen = alike.components[alike.kept_kind[k]] * mix(kept_colour[k]);  // a sum: a multiset
      for (int link : flows_.route_links(kept_route[k]))
        if (binding_[link]) c.link[link] += seen;
    }
    if (round == max_rounds_) {
      refined.settled = false;
      break;
    }
    for (uint32_t r = 0; r < c.route.size(); ++r) {
      uint64_t links_seen = 0;
      for (int link : flows_.route_links(r))
        if (binding_[link]) links_seen += mix(c.link[link]);
      c.route[r] = combine(c.route[r], links_seen);
    }
    colour_kept();
    const size_t now = count_distinct(kept_colour, slots);
    if (now == flow_colours) break;
    flow_colours = now;
  }
  c.components = std::move(start);
  return refined;
}

ReplicaClasses::Kinds ReplicaClasses::kinds(const Components& components) const {
  const std::vector<uint32_t>& component = components.of_flow;
  const size_t flows = component.size();
  // Each component's key: its multiset of routes (a sum of their hashes) and size.
  std::vector<uint64_t> key(components.count, 0);
  std::vector<uint32_t> size(components.count, 0);
  for (uint32_t f = 0; f < flows; ++f) {
    key[component[f]] += mix(uint64_t{flows_.route_index(f)} + 1);
    size[component[f]] += 1;
  }
  for (uint32_t k = 0; k < components.count; ++k) key[k] = combine(key[k], static_cast<int>(size[k]));
  const KeyNumbering numbering = number_by_key(key);
  Kinds kinds;
  kinds.of_component = numbering.of_item;
  kinds.components.assign(numbering.count, 0);
  for (uint32_t kind : kinds.of_component) kinds.components[kind] += 1;
  for (uint32_t f = 0; f < flows; ++f)
    if (numbering.first[component[f]]) {
      kinds.kept_route.push_back(flows_.route_index(f));
      kinds.kept_kind.push_back(kinds.of_component[component[f]]);
    }
  return kinds;
}

// Splits classes until every member's flows look like its representative's;
// returns the colours of that last partition. Where refinement does not
// settle, the classes of its last round stand (approximate_after_rounds()).
ReplicaClasses::Colours ReplicaClasses::refine(const std::vector<double>& link_bytes_per_second,
                                               const std::set<int>& altered_links) {
  for (;;) {
    Refined refined = refine_colours(starting_together(), link_bytes_per_second, altered_links);
    const Colours& colours = refined.colours;
    std::vector<uint64_t> keys(replicas_);
    for (int m = 0; m < replicas_; ++m) {
      // The sequence of its flows' colours (and whether its representative
      // has one there) as a sum of terms, each a colour at its place: no
      // chain of hashes from one flow to the next.
      uint64_t sum = 0, place = 0;
      for_each_replica_flow(m, [&](uint32_t f, uint32_t counterpart) {
        const uint64_t absent = counterpart == no_flow ? 0x5851f42d4c957f2d : 0;
        sum += mix((flow_colour(colours, f) ^ absent) + ++place * 0x9e3779b97f4a7c15);
      });
      keys[m] = combine(combine(static_cast<uint64_t>(class_of_replica_[m]), sum), place);
    }
    const int before = count();
    set_classes(keys);
    approximate_ = !refined.settled;
    if (count() == before || approximate_) return std::move(refined.colours);
  }
}

// Every flow and link a colour of its own: the full replay.
ReplicaClasses::Colours ReplicaClasses::distinct_colours(size_t links) const {
  Colours c;
  c.components.of_flow.resize(flows_.all().size());
  std::iota(c.components.of_flow.begin(), c.components.of_flow.end(), 0u);
  c.components.count = static_cast<uint32_t>(c.components.of_flow.size());
  c.route.assign(flows_.route_count(), 0);
  c.kinds = kinds(c.components);
  c.link.resize(links);
  std::iota(c.link.begin(), c.link.end(), uint64_t{0});
  return c;
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

// One link of each colour stands for all links of that colour. A simulated
// flow of colour k crosses it with weight n / s: n flows of colour k cross
// it in the full job, s of them are simulated (they run alike). Weights are
// made whole by scaling the link's capacity.
//
// A colour is a component's flows of one route history. n depends on the
// component's kind only (its multiset of routes), so it is counted on the
// kind's first component; s on the multiset of the histories of the
// component's simulated flows, so components of one kind and one such
// multiset (a pattern) cross each link with the same n and s.
void ReplicaClasses::weigh_routes(const Colours& colours) {
  const std::vector<uint64_t>& link_colour = colours.link;
  const size_t links = link_colour.size(), flows = flows_.all().size();
  const std::vector<uint32_t>& component = colours.components.of_flow;
  const Kinds& kinds = colours.kinds;
  const auto history = [&](uint32_t route) { return colours.route[route]; };
  std::vector<char> simulated_flow(flows, 0), link_seen(links, 0);
  std::unordered_map<uint64_t, int> link_of_colour;  // the link standing for its colour
  for (int rep : representatives_)
    for_each_replica_flow(rep, [&](uint32_t f, uint32_t) {
      simulated_flow[f] = 1;
      for (int link : flows_.route(f))
        if (binding_[link] && !link_seen[link]) {
          link_seen[link] = 1;
          link_of_colour.try_emplace(link_colour[link], link);
        }
    });
  std::vector<int> canonical(links, -1);
  for (size_t l = 0; l < links; ++l)
    if (auto it = link_of_colour.find(link_colour[l]); binding_[l] && it != link_of_colour.end())
      canonical[l] = it->second;
  // n by (kind, history, canonical link): the flows of a component of that
  // kind and route history crossing the link.
  const auto crossing_key = [](uint32_t kind, uint64_t route_history, int link) {
    return combine(combine(route_history, static_cast<int>(kind)), link);
  };
  std::unordered_map<uint64_t, int64_t> crossings_of;
  struct Crossing {
    uint32_t kind;
    int link;
    uint64_t route_history;
  };
  std::vector<Crossing> crossings;  // each (kind, history, canonical link) once
  for (size_t k = 0; k < kinds.kept_route.size(); ++k)
    for (int link : flows_.route_links(kinds.kept_route[k]))
      if (canonical[link] == link) {  // never a link that cannot bind
        const uint64_t h = history(kinds.kept_route[k]);
        if (crossings_of[crossing_key(kinds.kept_kind[k], h, link)]++ == 0)
          crossings.push_back({kinds.kept_kind[k], link, h});
      }
  // s: each component's pattern, the first component of each pattern, and
  // by (pattern, history) its simulated flows (one where none is).
  std::vector<uint64_t> simulated_histories(colours.components.count, 0);  // a sum: a multiset
  for (uint32_t f = 0; f < flows; ++f)
    if (simulated_flow[f]) simulated_histories[component[f]] += mix(history(flows_.route_index(f)));
  std::vector<uint64_t> pattern_keys(colours.components.count);
  for (uint32_t c = 0; c < colours.components.count; ++c)
    pattern_keys[c] = combine(simulated_histories[c], static_cast<int>(kinds.of_component[c]));
  const KeyNumbering patterns = number_by_key(pattern_keys);
  const std::vector<uint32_t>& pattern = patterns.of_item;
  std::vector<uint32_t> kind_of_pattern(patterns.count);
  for (uint32_t c = 0; c < colours.components.count; ++c)
    if (patterns.first[c]) kind_of_pattern[pattern[c]] = kinds.of_component[c];
  const auto simulated_key = [](uint32_t pattern, uint64_t route_history) {
    return combine(route_history, static_cast<int>(pattern));
  };
  std::unordered_map<uint64_t, int64_t> simulated_of;
  for (uint32_t f = 0; f < flows; ++f)
    if (simulated_flow[f] && patterns.first[component[f]])
      simulated_of[simulated_key(pattern[component[f]], history(flows_.route_index(f)))] += 1;
  const auto s_of = [&](uint32_t pattern, uint64_t route_history) -> int64_t {
    auto it = simulated_of.find(simulated_key(pattern, route_history));
    return it == simulated_of.end() ? 1 : it->second;
  };
  // Per canonical link: the scale making every n / s whole, and the divisor
  // of the whole weights; both depend only on the distinct (n, s) there.
  std::vector<std::vector<uint32_t>> patterns_of_kind(kinds.components.size());
  for (uint32_t p = 0; p < kind_of_pattern.size(); ++p) patterns_of_kind[kind_of_pattern[p]].push_back(p);
  std::set<std::tuple<int, int64_t, int64_t>> distinct;  // link, n, s
  for (const Crossing& x : crossings)
    for (uint32_t p : patterns_of_kind[x.kind])
      distinct.emplace(x.link, crossings_of[crossing_key(x.kind, x.route_history, x.link)], s_of(p, x.route_history));
  std::vector<int64_t> scale(links, 1), divisor(links, 0);
  for (const auto& [link, n, s] : distinct) scale[link] = std::lcm(scale[link], s / std::gcd(n, s));
  for (const auto& [link, n, s] : distinct) divisor[link] = std::gcd(divisor[link], n * scale[link] / s);
  capacity_scale_.assign(links, 1.0);
  for (size_t l = 0; l < links; ++l)
    if (divisor[l] > 0) capacity_scale_[l] = static_cast<double>(scale[l]) / static_cast<double>(divisor[l]);
  weighted_begin_.assign(flows + 1, 0);
  for (uint32_t f = 0; f < flows; ++f) {
    const size_t begin = weighted_links_.size();
    if (simulated_flow[f]) {
      const uint64_t h = history(flows_.route_index(f));
      const uint32_t kind = kinds.of_component[component[f]];
      for (int link : flows_.route(f)) {
        if (!binding_[link]) continue;
        const int c = canonical[link];
        if (std::any_of(weighted_links_.begin() + static_cast<std::ptrdiff_t>(begin), weighted_links_.end(),
                        [&](const WeightedLink& w) { return w.link == c; }))
          continue;  // two links of one colour on a route: one constraint
        auto n = crossings_of.find(crossing_key(kind, h, c));
        if (n == crossings_of.end()) throw std::logic_error("replica classes: a flow crosses a link unlike its own");
        const int64_t whole = n->second * scale[c] / s_of(pattern[component[f]], h) / divisor[c];
        weighted_links_.push_back({c, static_cast<int>(whole)});
      }
    }
    weighted_begin_[f + 1] = static_cast<uint32_t>(weighted_links_.size());
  }
}

}  // namespace simtrain
