#pragma once
// The communication groups of a Program: tensor-parallel, data-parallel (or,
// for hierarchical synchronisation, its per-node and across-node parts; or
// through parameter servers), expert-parallel and expert-data-parallel, and
// the tied-embedding pair, context-parallel, with each rank's group of every kind.
#include <array>
#include <vector>

#include "sim/program/program.hpp"
#include "sim/scenario/rank_layout.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct CommGroups {
  std::vector<Group> list;  // Program::groups, indexed by id
  // Indexed by rank: the id of the rank's group of each kind, -1 if it has none.
  std::vector<int> tp, dp, dp_node, dp_across, embedding;
  // Expert parallelism (Megatron-Core's expert rank order tp-ep-dp-pp with
  // expert_tensor_parallel_size = TP): an EP group is `expert` consecutive
  // data-parallel ranks; the expert-data-parallel group, over which expert
  // gradients are reduced, the ranks of one EP index (none where it would
  // be one rank, and none when EP is 1: experts are reduced with the rest).
  std::vector<int> ep, expert_dp;
  // The flex dispatcher's EP group spanning nodes (expert_group_nodes), in
  // place of `ep`: its members on one node (none where that is one rank),
  // and the i-th member of each node, as DeepEP forwards tokens
  // (sim/model/layers/moe_ops.cpp).
  std::vector<int> ep_node, ep_across;
  // Context parallelism: a CP group is `context` consecutive ranks of the
  // data coordinate (RankLayout's dp_cp). Its all-to-all groups (a2a, a2a+p2p)
  // and its ring groups (p2p, all_gather, a2a+p2p), in the ring order of the
  // K/V exchange, are the CP group itself but in a2a+p2p [A, B], where, as
  // Megatron-Core's create_hierarchical_groups forms them, each A consecutive
  // CP ranks are an all-to-all group and the CP ranks A apart a ring group.
  std::vector<int> cp_a2a, cp_ring;

  const Group& operator[](int id) const { return list[id]; }
};

// Every kind of CommGroups' per-rank ids, for code that treats the kinds alike.
inline constexpr std::array kGroupKinds = {&CommGroups::tp,        &CommGroups::dp, &CommGroups::dp_node,
                                           &CommGroups::dp_across, &CommGroups::embedding, &CommGroups::ep,
                                           &CommGroups::expert_dp, &CommGroups::cp_a2a,
                                           &CommGroups::cp_ring,   &CommGroups::ep_node, &CommGroups::ep_across};

// `servers`: the parameter-server hosts data-parallel groups synchronise through (0: none).
// `holds_experts`: per pipeline rank, whether its stages hold MoE layers (a
// rank of dense layers only, in a model mixing both, has no expert groups).
CommGroups make_groups(const Scenario& scenario, const RankLayout& layout, int servers,
                       const std::vector<bool>& holds_experts);

}  // namespace simtrain
