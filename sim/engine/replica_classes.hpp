#pragma once
// The symmetry reduction of a replay. Data-parallel replicas (the ranks of
// one dp coordinate: every stage, every TP rank) usually run the same task
// lists over equivalent network positions; replicas that do form a class,
// and the replay runs one of them, the class's representative, for all.
//
// How classes are found: replicas start in one class per set of GPU speeds
// and task-list structure (a failing GPU's replica is alone). Flows that
// start together share a colour: a lane task's flows of the same bytes, a
// class's flows at one place of its task lists, and, across classes, those
// at one place of a collective whose group spans replicas (its barrier
// releases them at once). Colour refinement then colours each link by its
// capacity, latency (a degraded or failing link is unlike any other) and the
// multiset of its flows' colours, and each flow by its colour and the
// multiset of its links' colours, until no colour splits; a member whose
// flows' colours differ from its representative's leaves for a class of its
// own kind, and refinement starts again, until no class splits. Links that can never limit a flow are left
// out. Refinement still splitting after ReplayOptions::max_refinement_rounds
// (64) stops there: replicas alike as far as those rounds see form the
// classes, an approximation (differences that travel farther, one ring hop
// a round, are ignored) that the report names.
//
// How shared links still see every class: at the fixed point flows and links
// form an equitable partition, so max-min sharing raises all flows of a
// colour alike. One link per colour stands for all of that colour; a
// simulated flow of colour k crosses it with weight n/s (n flows of colour k
// cross it in the full job, s of them are simulated; SimGrid counts a link
// listed r times in a route r times), over a capacity scaled to make the
// weights whole (ARCHITECTURE.md, "The replay, reduced by symmetry").
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "sim/engine/lane_flows.hpp"
#include "sim/engine/replay_lanes.hpp"
#include "sim/engine/replay_options.hpp"
#include "sim/engine/replay_platform.hpp"  // WeightedLink

namespace simtrain {

class ReplicaClasses {
public:
  // `link_bytes_per_second` by fabric link (degradations included);
  // `altered_links` degraded or failing ones. With options.full_replay every
  // replica is a class of its own.
  ReplicaClasses(const Program& program, const Fabric& fabric, const Lanes& lanes, const LaneFlows& lane_flows,
                 const std::vector<double>& link_bytes_per_second, const std::set<int>& altered_links,
                 const ReplayOptions& options);

  int count() const { return static_cast<int>(representatives_.size()); }
  // Whether the replay runs `rank`'s tasks (its replica represents a class).
  bool simulated(int rank) const { return is_representative_replica_[replica_of(rank)] != 0; }
  // By rank: the rank of the representative replica at its place.
  const std::vector<int>& representative_of_rank() const { return representative_of_rank_; }
  // The task the replay runs for task `id` (a lane representative's, on the
  // class's representative replica; a RECV stands for itself).
  int stand_in(int id) const;
  // How many replicas the class of `rank`'s replica holds.
  int class_size(int rank) const { return class_size_[class_of_replica_[replica_of(rank)]]; }
  // The route of representative flow `flow` (index into LaneFlows::all()).
  std::span<const WeightedLink> weighted_route(uint32_t flow) const;
  // What a link's capacity is multiplied by so that its weights are whole (1 where unused).
  double capacity_scale(int link) const { return capacity_scale_[link]; }
  // 0 where colour refinement settled (classes of exactly equivalent
  // replicas); else the rounds after which it stopped, its classes holding
  // replicas alike that far.
  int approximate_after_rounds() const { return approximate_ ? max_rounds_ : 0; }

private:
  // Flows that start together: by flow, its component, numbered densely.
  struct Components {
    std::vector<uint32_t> of_flow;
    uint32_t count = 0;
  };
  // Components alike, with the same multiset of routes, are of one kind.
  struct Kinds {
    std::vector<uint32_t> of_component;
    std::vector<uint64_t> components;             // by kind: how many
    std::vector<uint32_t> kept_route, kept_kind;  // the flows of each kind's first component
  };
  // A flow's colour is its component's and what refinement saw along its
  // route (flow_colour).
  struct Colours {
    std::vector<uint64_t> link;   // by link
    std::vector<uint64_t> route;  // by route (LaneFlows::route_index)
    Components components;
    Kinds kinds;
  };
  struct Refined {
    Colours colours;
    bool settled = true;
  };
  int replica_of(int rank) const { return replica_of_rank_[rank]; }
  void find_replicas();
  std::vector<uint64_t> structure_signatures() const;
  std::vector<char> links_that_can_bind(const std::vector<double>& link_bytes_per_second,
                                       const std::set<int>& altered_links) const;
  Components starting_together() const;
  Refined refine_colours(Components start, const std::vector<double>& link_bytes_per_second,
                         const std::set<int>& altered_links) const;
  uint64_t flow_colour(const Colours& colours, uint32_t flow) const;
  Kinds kinds(const Components& components) const;
  Colours refine(const std::vector<double>& link_bytes_per_second, const std::set<int>& altered_links);
  Colours distinct_colours(size_t links) const;
  void set_classes(const std::vector<uint64_t>& keys);
  void weigh_routes(const Colours& colours);
  template <typename OnComm>
  void for_each_replica_comm(int replica, OnComm&& on_comm) const;
  template <typename OnFlow>
  void for_each_replica_flow(int replica, OnFlow&& on_flow) const;

  const Program& prog_;
  const Fabric& fabric_;
  const Lanes& lanes_;
  const LaneFlows& flows_;
  const int max_rounds_;
  int replicas_ = 1;
  bool approximate_ = false;
  std::vector<std::vector<int>> ranks_of_replica_;  // by replica, by slot (pp, tp; tp fastest)
  std::vector<int> slot_of_rank_, replica_of_rank_;
  std::vector<int> class_of_replica_, representatives_, class_size_;
  std::vector<char> is_representative_replica_;
  std::vector<int> representative_of_rank_;
  std::vector<uint32_t> weighted_begin_;   // by flow, and one past the last
  std::vector<WeightedLink> weighted_links_;
  std::vector<double> capacity_scale_;     // by link
  std::vector<char> binding_;              // by link: whether it can limit a flow (else left out of routes)
  std::vector<uint64_t> structure_;        // by replica: its task lists' signature, speeds aside
  std::vector<char> spans_replicas_;       // by group
};

}  // namespace simtrain
