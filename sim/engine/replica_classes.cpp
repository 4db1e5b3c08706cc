#include "sim/engine/replica_classes.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
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
// alike whatever the network: every lane's task list (kinds, works, sizes,
// dependencies by place) and each of its tasks' flows (count, bytes,
// closed-form time).
std::vector<uint64_t> ReplicaClasses::structure_signatures() const {
  std::vector<uint64_t> signature(replicas_, 0);
  auto place = [&](int id) {  // a task's place in any replica: its rank's slot and its position there
    return (static_cast<uint64_t>(slot_of_rank_[prog_.tasks.rank_of(id)]) << 32) |
           static_cast<uint32_t>(prog_.tasks.position_in_rank(id));
  };
  for (int r = 0; r < prog_.world_size; ++r) {
    if (!lanes_.is_representative(r)) continue;  // the lane's other ranks mirror it
    uint64_t& h = signature[replica_of(r)];
    h = combine(combine(h, slot_of_rank_[r]), static_cast<int>(prog_.rank_tasks(r).size()));
    for (int id : prog_.rank_tasks(r)) {
      const Task& t = prog_.tasks[id];
      for (int v : {static_cast<int>(t.kind), static_cast<int>(t.stream), t.work, t.stage, t.microbatch, t.layer_begin,
                    t.layer_end, t.count, static_cast<int>(t.dim), static_cast<int>(t.joins_batch)})
        h = combine(h, v);
      h = combine(h, t.bytes);
      if (t.peer >= 0) h = combine(h, t.peer < prog_.world_size ? slot_of_rank_[t.peer] : t.peer);
      for (int dep : prog_.deps(t)) {
        const int dep_replica = replica_of(prog_.tasks.rank_of(dep));
        // A task of another replica is unlike any.
        h = combine(combine(h, place(dep)), dep_replica == replica_of(r) ? -1 : dep_replica);
      }
      if (const LaneComm* comm = flows_.comm(id)) {
        h = combine(combine(h, static_cast<int>(comm->flow_count)), comm->later_steps_latency_seconds);
        if (comm->closed_form) h = combine(h, comm->closed_form->seconds);
        for (const LaneFlow& f : flows_.flows(*comm)) h = combine(h, f.bytes);
      }
    }
  }
  return signature;
}

// Calls on_comm(comm, counterpart, task, position) for each lane task of
// `replica` with network work, in a fixed order: counterpart is the work at
// the same place of its class's representative (null where it has none
// there), task the lane task, position that task's place in its rank.
template <typename OnComm>
void ReplicaClasses::for_each_replica_comm(int replica, OnComm&& on_comm) const {
  const int rep_replica = representatives_[class_of_replica_[replica]];
  for (size_t slot = 0; slot < ranks_of_replica_[replica].size(); ++slot) {
    const int rank = ranks_of_replica_[replica][slot];
    if (!lanes_.is_representative(rank)) continue;
    const RankTaskIds mine = prog_.rank_tasks(rank);
    const RankTaskIds reps = prog_.rank_tasks(ranks_of_replica_[rep_replica][slot]);
    for (size_t i = 0; i < mine.size(); ++i)
      if (const LaneComm* comm = flows_.comm(mine[i]))
        on_comm(*comm, i < reps.size() ? flows_.comm(reps[i]) : nullptr, prog_.tasks[mine[i]],
                static_cast<uint32_t>(i));
  }
}

// Calls on_flow(flow, counterpart, task, position) for each flow `replica`
// drives, in a fixed order: counterpart is the flow at the same place of its
// class's representative (no_flow where the representative has none there),
// task the lane task sending it, position that task's place in its rank.
template <typename OnFlow>
void ReplicaClasses::for_each_replica_flow(int replica, OnFlow&& on_flow) const {
  for_each_replica_comm(replica, [&](const LaneComm& comm, const LaneComm* rep_comm, const Task& task, uint32_t i) {
    for (uint32_t j = 0; j < comm.flow_count; ++j)
      on_flow(comm.first_flow + j, rep_comm && j < rep_comm->flow_count ? rep_comm->first_flow + j : no_flow, task, i);
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
ReplicaClasses::FlowColours ReplicaClasses::starting_together() const {
  const size_t flows = flows_.all().size();
  std::vector<uint32_t> parent(flows);
  std::iota(parent.begin(), parent.end(), 0u);
  auto root = [&](uint32_t f) {
    while (parent[f] != f) f = parent[f] = parent[parent[f]];
    return f;
  };
  auto join = [&](uint32_t a, uint32_t b) { parent[root(a)] = root(b); };
  // The flows of two works at one place, pairwise.
  auto join_works = [&](const LaneComm& a, const LaneComm& b) {
    for (uint32_t j = 0; j < std::min(a.flow_count, b.flow_count); ++j) join(a.first_flow + j, b.first_flow + j);
  };
  std::unordered_map<uint64_t, const LaneComm*> first_at_place;  // by (structure, barrier group, position)
  for (int m = 0; m < replicas_; ++m)
    for_each_replica_comm(m, [&](const LaneComm& comm, const LaneComm* counterpart, const Task& task,
                                 uint32_t position) {
      if (counterpart) join_works(comm, *counterpart);
      if (!is_collective(task.kind) || !spans_replicas_[task.group]) return;
      const uint64_t place = combine(combine(structure_[m], task.group), static_cast<int>(position));
      if (auto [it, added] = first_at_place.try_emplace(place, &comm); !added) join_works(comm, *it->second);
    });
  FlowColours colours{std::vector<uint64_t>(flows), 0};
  for (uint32_t f = 0; f < flows; ++f) {
    colours.flow[f] = root(f);
    colours.count += colours.flow[f] == f;  // a colour per root
  }
  return colours;
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
ReplicaClasses::Refined ReplicaClasses::refine_colours(FlowColours start,
                                                       const std::vector<double>& link_bytes_per_second,
                                                       const std::set<int>& altered_links) const {
  std::vector<uint64_t>& flow_colour = start.flow;
  const size_t links = link_bytes_per_second.size();
  std::vector<uint64_t> link_base(links);
  for (size_t l = 0; l < links; ++l)
    link_base[l] = combine(combine(combine(uint64_t{0}, link_bytes_per_second[l]), fabric_.links()[l].latency_seconds),
                           altered_links.count(static_cast<int>(l)) ? static_cast<int>(l) : -1);
  Refined refined;
  Colours& c = refined.colours;
  std::vector<uint64_t> slots;
  size_t flow_colours = start.count;
  for (int round = 0;; ++round) {
    c.link = link_base;
    for (uint32_t f = 0; f < flow_colour.size(); ++f)
      for (int link : flows_.route(f))
        if (binding_[link]) c.link[link] += mix(flow_colour[f]);  // a sum: a multiset
    if (round == max_rounds_) {
      refined.settled = false;
      break;
    }
    // In place (a copy would be 8 bytes a flow): refining only splits, so
    // where the count stays the new colours name the same classes.
    for (uint32_t f = 0; f < flow_colour.size(); ++f) {
      uint64_t links_seen = 0;
      for (int link : flows_.route(f))
        if (binding_[link]) links_seen += mix(c.link[link]);
      flow_colour[f] = combine(flow_colour[f], links_seen);
    }
    const size_t now = count_distinct(flow_colour, slots);
    if (now == flow_colours) break;
    flow_colours = now;
  }
  c.flow = std::move(flow_colour);
  return refined;
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
      uint64_t h = static_cast<uint64_t>(class_of_replica_[m]);
      for_each_replica_flow(m, [&](uint32_t f, uint32_t counterpart, const Task&, uint32_t) {
        h = combine(combine(h, colours.flow[f]), counterpart == no_flow);
      });
      keys[m] = h;
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
  c.flow.resize(flows_.all().size());
  c.link.resize(links);
  std::iota(c.flow.begin(), c.flow.end(), uint64_t{0});
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
void ReplicaClasses::weigh_routes(const Colours& colours) {
  const std::vector<uint64_t>& flow_colour = colours.flow;
  const std::vector<uint64_t>& link_colour = colours.link;
  const size_t links = link_colour.size(), flows = flow_colour.size();
  std::vector<char> simulated_flow(flows, 0);
  std::unordered_map<uint64_t, int64_t> simulated_of_colour;
  std::unordered_map<uint64_t, int> link_of_colour;  // the link standing for its colour
  for (int rep : representatives_)
    for_each_replica_flow(rep, [&](uint32_t f, uint32_t, const Task&, uint32_t) {
      simulated_flow[f] = 1;
      simulated_of_colour[flow_colour[f]] += 1;
      for (int link : flows_.route(f))
        if (binding_[link]) link_of_colour.try_emplace(link_colour[link], link);
    });
  std::vector<int> canonical(links, -1);
  for (size_t l = 0; l < links; ++l)
    if (auto it = link_of_colour.find(link_colour[l]); binding_[l] && it != link_of_colour.end())
      canonical[l] = it->second;
  // n: by canonical link and flow colour, the flows of the full job crossing
  // it; counted by sorting the (link, colour) pairs of every route.
  struct Crossing {
    int link;
    int32_t s;  // simulated flows of the colour; 32 bits beside link keep a crossing at 24 bytes
    uint64_t colour;
    int64_t n;
  };
  // Looked up once per crossing or flow: millions of colours make each lookup a cache miss.
  auto simulated_of = [&](uint64_t colour) -> int64_t {
    auto it = simulated_of_colour.find(colour);
    return it == simulated_of_colour.end() ? 1 : it->second;
  };
  std::vector<std::pair<int, uint64_t>> pairs;
  for (uint32_t f = 0; f < flows; ++f)
    for (int link : flows_.route(f))
      if (canonical[link] == link) pairs.emplace_back(link, flow_colour[f]);  // never a link that cannot bind
  std::sort(pairs.begin(), pairs.end());
  std::vector<Crossing> crossing;
  for (const auto& [link, colour] : pairs)
    if (!crossing.empty() && crossing.back().link == link && crossing.back().colour == colour)
      ++crossing.back().n;
    else
      crossing.push_back({link, static_cast<int32_t>(simulated_of(colour)), colour, 1});
  // Each link's crossings, by colour: a search among one link's colours, not all.
  std::vector<size_t> crossing_begin(links + 1, 0);
  for (const Crossing& c : crossing) ++crossing_begin[c.link + 1];
  std::partial_sum(crossing_begin.begin(), crossing_begin.end(), crossing_begin.begin());
  auto crossing_of = [&](int link, uint64_t colour) -> const Crossing* {
    const auto end = crossing.begin() + static_cast<std::ptrdiff_t>(crossing_begin[link + 1]);
    auto it = std::lower_bound(crossing.begin() + static_cast<std::ptrdiff_t>(crossing_begin[link]), end, colour,
                               [](const Crossing& c, uint64_t key) { return c.colour < key; });
    return it != end && it->colour == colour ? &*it : nullptr;
  };
  // Per canonical link: the scale making every n / s whole, and the divisor
  // of the whole weights.
  std::vector<int64_t> scale(links, 1), divisor(links, 0);
  for (const Crossing& c : crossing) scale[c.link] = std::lcm(scale[c.link], c.s / std::gcd(c.n, c.s));
  for (const Crossing& c : crossing) divisor[c.link] = std::gcd(divisor[c.link], c.n * scale[c.link] / c.s);
  capacity_scale_.assign(links, 1.0);
  for (size_t l = 0; l < links; ++l)
    if (divisor[l] > 0) capacity_scale_[l] = static_cast<double>(scale[l]) / static_cast<double>(divisor[l]);
  weighted_begin_.assign(flows + 1, 0);
  for (uint32_t f = 0; f < flows; ++f) {
    const size_t begin = weighted_links_.size();
    if (simulated_flow[f])
      for (int link : flows_.route(f)) {
        if (!binding_[link]) continue;
        const int c = canonical[link];
        if (std::any_of(weighted_links_.begin() + static_cast<std::ptrdiff_t>(begin), weighted_links_.end(),
                        [&](const WeightedLink& w) { return w.link == c; }))
          continue;  // two links of one colour on a route: one constraint
        const Crossing* n = crossing_of(c, flow_colour[f]);
        if (!n) throw std::logic_error("replica classes: a flow crosses a link unlike its own");
        const int64_t whole = n->n * scale[c] / n->s / divisor[c];
        weighted_links_.push_back({c, static_cast<int>(whole)});
      }
    weighted_begin_[f + 1] = static_cast<uint32_t>(weighted_links_.size());
  }
}

}  // namespace simtrain
