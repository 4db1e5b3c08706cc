#include "sim/program/lowering_groups.hpp"

namespace simtrain {

namespace {

class GroupMaker {
public:
  GroupMaker(const Scenario& scenario, const RankLayout& layout, int servers, const std::vector<bool>& holds_experts)
      : s_(scenario), layout_(layout), servers_(servers), holds_experts_(holds_experts) {
    for (auto kind : kGroupKinds) (g_.*kind).assign(layout.world_size(), -1);
  }

  CommGroups make() {
    if (layout_.tensor > 1) make_tensor_groups();
    if (layout_.data > 1) make_data_groups();
    if (s_.parallel.expert > 1) make_expert_groups();
    if (layout_.context > 1) make_context_groups();
    // Tied input and output embeddings live on the first and last stage;
    // Megatron all-reduces their gradients between the two.
    if (s_.model.tie_word_embeddings && layout_.pipeline > 1)
      for (int dp = 0; dp < layout_.data; ++dp)
        for (int tp = 0; tp < layout_.tensor; ++tp)
          add(g_.embedding, CommDim::dp, "emb", {layout_.rank(tp, dp, 0), layout_.rank(tp, dp, layout_.pipeline - 1)});
    return std::move(g_);
  }

private:
  // A group of `ranks`, named after its id, recorded as each member's group in `of_rank`.
  Group& add(std::vector<int>& of_rank, CommDim dim, const std::string& name, std::vector<int> ranks) {
    const int id = static_cast<int>(g_.list.size());
    for (int r : ranks) of_rank[r] = id;
    Group& group = g_.list.emplace_back();
    group.id = id;
    group.dim = dim;
    group.name = name + std::to_string(id);
    group.ranks = std::move(ranks);
    return group;
  }

  void make_tensor_groups() {
    for (int pp = 0; pp < layout_.pipeline; ++pp)
      for (int dp = 0; dp < layout_.data; ++dp) {
        std::vector<int> ranks;
        for (int tp = 0; tp < layout_.tensor; ++tp) ranks.push_back(layout_.rank(tp, dp, pp));
        add(g_.tp, CommDim::tp, "tp", ranks);
      }
  }

  void make_data_groups() {
    const DpSync sync = s_.parallel.dp_sync;
    for (int pp = 0; pp < layout_.pipeline; ++pp)
      for (int tp = 0; tp < layout_.tensor; ++tp) {
        std::vector<int> ranks;
        for (int dp = 0; dp < layout_.data; ++dp) ranks.push_back(layout_.rank(tp, dp, pp));
        if (sync == DpSync::hierarchical) {
          make_hierarchical_groups(ranks);
          continue;
        }
        Group& group = add(g_.dp, CommDim::dp, servers_ > 0 ? "ps" : "dp", ranks);
        group.servers = servers_;
        if (sync == DpSync::ring) group.allreduce_algorithm = Algorithm::ring;
        if (sync == DpSync::tree) group.allreduce_algorithm = Algorithm::tree;
        if (s_.cluster.communication_backend == CommunicationBackend::gloo) group.allreduce_algorithm = Algorithm::gloo_ring;
      }
  }

  void make_expert_groups() {
    const int ep = static_cast<int>(s_.parallel.expert), expert_data = layout_.data / ep;
    for (int pp = 0; pp < layout_.pipeline; ++pp) {
      if (!holds_experts_[pp]) continue;
      for (int tp = 0; tp < layout_.tensor; ++tp) {
        for (int block = 0; block < expert_data; ++block) {
          std::vector<int> ranks;
          for (int e = 0; e < ep; ++e) ranks.push_back(layout_.rank(tp, block * ep + e, pp));
          if (!make_deepep_groups(ranks)) add(g_.ep, CommDim::ep, "ep", ranks);
        }
        if (expert_data < 2) continue;
        for (int e = 0; e < ep; ++e) {
          std::vector<int> ranks;
          for (int block = 0; block < expert_data; ++block) ranks.push_back(layout_.rank(tp, block * ep + e, pp));
          Group& group = add(g_.expert_dp, CommDim::dp, "edp", ranks);
          if (s_.cluster.communication_backend == CommunicationBackend::gloo)
            group.allreduce_algorithm = Algorithm::gloo_ring;
        }
      }
    }
  }

  // The flex dispatcher's EP group spanning nodes evenly (expert_group_nodes)
  // as its members on each node and the i-th member of every node, which
  // its exchanges go over instead of the whole group; false where it does not.
  bool make_deepep_groups(const std::vector<int>& ranks) {
    if (s_.parallel.moe_dispatcher != MoeDispatcher::flex) return false;
    const int nodes = static_cast<int>(expert_group_nodes(s_.parallel, s_.cluster.topology.gpus_per_node));
    if (nodes == 1) return false;
    const int per_node = static_cast<int>(ranks.size()) / nodes;
    for (int node = 0; node < nodes && per_node > 1; ++node)
      add(g_.ep_node, CommDim::ep, "epnode",
          std::vector<int>(ranks.begin() + node * per_node, ranks.begin() + (node + 1) * per_node));
    for (int i = 0; i < per_node; ++i) {
      std::vector<int> across;
      for (int node = 0; node < nodes; ++node) across.push_back(ranks[node * per_node + i]);
      add(g_.ep_across, CommDim::ep, "epacross", across);
    }
    return true;
  }

  void make_context_groups() {
    const int cp = layout_.context, a2a = static_cast<int>(s_.parallel.context_a2a()), ring = cp / a2a;
    // A sub-group of the CP group is named after its role, but where it is the whole CP group.
    const auto name = [&](int size, const char* role) { return size == cp ? "cp" : role; };
    for (int pp = 0; pp < layout_.pipeline; ++pp)
      for (int block = 0; block < layout_.data / cp; ++block)
        for (int tp = 0; tp < layout_.tensor; ++tp) {
          const auto member = [&](int c) { return layout_.rank(tp, block * cp + c, pp); };
          for (int outer = 0; outer < ring && a2a > 1; ++outer) {
            std::vector<int> ranks;
            for (int inner = 0; inner < a2a; ++inner) ranks.push_back(member(outer * a2a + inner));
            add(g_.cp_a2a, CommDim::cp, name(a2a, "cpa2a"), ranks);
          }
          for (int inner = 0; inner < a2a && ring > 1; ++inner) {
            std::vector<int> ranks;
            for (int outer = 0; outer < ring; ++outer) ranks.push_back(member(outer * a2a + inner));
            add(g_.cp_ring, CommDim::cp, name(ring, "cpring"), ranks);
          }
        }
  }

  // A data-parallel group split at node boundaries: the members on each node
  // (reduce-scatter, then all-gather), and the i-th member of every node (the
  // all-reduce in between). The scenario checks that nodes hold equal shares.
  void make_hierarchical_groups(const std::vector<int>& ranks) {
    const int gpus_per_node = s_.cluster.topology.gpus_per_node;
    std::vector<std::vector<int>> nodes;
    for (int r : ranks) {
      if (nodes.empty() || nodes.back().front() / gpus_per_node != r / gpus_per_node) nodes.emplace_back();
      nodes.back().push_back(r);
    }
    for (const std::vector<int>& members : nodes)
      if (members.size() >= 2) add(g_.dp_node, CommDim::dp, "dpnode", members);
    if (nodes.size() < 2) return;
    for (size_t i = 0; i < nodes.front().size(); ++i) {
      std::vector<int> across;
      for (const std::vector<int>& members : nodes) across.push_back(members[i]);
      add(g_.dp_across, CommDim::dp, "dpacross", across);
    }
  }

  const Scenario& s_;
  const RankLayout& layout_;
  const int servers_;
  const std::vector<bool>& holds_experts_;
  CommGroups g_;
};

}  // namespace

CommGroups make_groups(const Scenario& scenario, const RankLayout& layout, int servers,
                       const std::vector<bool>& holds_experts) {
  return GroupMaker(scenario, layout, servers, holds_experts).make();
}

}  // namespace simtrain
