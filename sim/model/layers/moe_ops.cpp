#include "sim/model/layers/moe_ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/model/layers/mlp_ops.hpp"
#include "sim/scenario/rank_layout.hpp"

namespace simtrain::layers {

// Each of the busiest EP rank's local experts gets the mean (the EP group's
// tokens x top-k over the experts), one of them moe_load_imbalance times it,
// each capped at capacity_factor times the mean (dropped beyond it); spread
// over its experts for the grouped GEMM's shape.
void size_experts(const Scenario& scenario, Shard& x) {
  const ModelConfig& m = scenario.model;
  const TrainingConfig& t = scenario.training;
  x.ep = scenario.parallel.expert;
  x.local_experts = m.num_experts / x.ep;
  x.top_k = m.experts_per_token;
  x.expert_ffn = m.moe_intermediate_size / x.tp;
  const int64_t shared_width = m.shared_experts * m.moe_intermediate_size + m.shared_expert_intermediate_size;
  x.shared_ffn = shared_width / x.tp;
  x.dispatcher = scenario.parallel.moe_dispatcher;
  x.flex_backend = scenario.parallel.moe_flex_backend;
  if (x.dispatcher == MoeDispatcher::flex)
    x.ep_nodes = expert_group_nodes(scenario.parallel, scenario.cluster.topology.gpus_per_node);
  x.expert_gemm_streams = scenario.software.moe_grouped_gemm ? kTransformerEngineComputeStreams : 1;
  const double mean = double(x.ep) * double(x.tokens()) * double(x.top_k) / double(m.num_experts);
  const double cap = t.capacity_factor > 0 ? t.capacity_factor : std::numeric_limits<double>::infinity();
  const double rank_rows =
      mean * (double(x.local_experts - 1) * std::min(1.0, cap) + std::min(t.moe_load_imbalance, cap));
  x.expert_rows = std::max<int64_t>(1, int64_t(std::ceil(rank_rows / double(x.local_experts))));
  x.counted_expert_rows = mean / double(x.expert_rows);
}

int64_t exchanged_rows(const Shard& x) { return x.rank_expert_rows() / (x.sequence_parallel ? x.tp : 1); }

double expected_destinations(int64_t experts, int64_t top_k, int64_t holders) {
  // C(E - E/H, K) / C(E, K) as a product: the chance a holder has none of the K.
  const double each = double(experts) / double(holders);
  double none = 1;
  for (int64_t i = 0; i < top_k && none > 0; ++i)
    none *= std::max(0.0, double(experts) - each - double(i)) / double(experts - i);
  return double(holders) * (1 - none);
}

namespace {

// The rows exchanged against the routed rows: 1 but for flex, where DeepEP
// sends a token once to each EP rank holding any of its experts, and the
// alltoall dispatcher's permutation a row per routed expert (K a token).
double exchanged_row_fraction(const Shard& x) {
  if (x.dispatcher != MoeDispatcher::flex) return 1;
  return expected_destinations(x.model.num_experts, x.top_k, x.ep) / double(x.top_k);
}

// DeepEP's dispatch and combine (either pass): within a node, one
// all-to-all over the EP group, a row per token and destination rank
// (exchanged_row_fraction). Across nodes (deepseek-ai/DeepEP 567632dd
// README, csrc/kernels/internode.cu): a token crosses to each destination
// node once, over RDMA to the rank of its own local index there, which
// forwards it over NVLink to the node's ranks that hold its experts. Lowered
// as an all-to-all among the EP group's i-th members of every node, a row
// per token and destination node (d_N), then one among its members on each
// node, where each rank forwards its own tokens and those it received: of
// each of the N nodes' tokens, d_R / N rows on average (d_R the destination
// ranks of a token), d_R rows in all for each token the rank routed. The two
// run one after the other, where DeepEP pipelines them: an upper bound of
// its time. An EP group spanning nodes unevenly (expert_group_nodes 1) runs
// the one all-to-all, counting d_R / d_N times DeepEP's RDMA bytes.
// HybridEP (deepseek-ai/DeepEP hybrid-ep 94a9f8f6, docs/Hybrid-EP_
// Implementation.md section 8) moves the same rows the same way (RDMA once
// a destination node between peers of one local index, then NVLink to each
// destination rank), and beside each row of the dispatch that carries the
// probabilities (the forward's; the backward's combine of their gradient)
// the fp32 probabilities of the destination node's experts
// (csrc/hybrid_ep/hybrid_ep.cu, executor.cu: a row of
// num_of_experts_per_rank x num_of_ranks_per_node floats, the TP-expanded
// experts over the group's nodes): that exchange counted apart.
void add_deepep_exchanges(const Shard& x, Pass& pass) {
  const double row_bytes = double(x.hidden) * x.element_bytes;
  const double routed_bytes = double(exchanged_rows(x)) * row_bytes;
  const double per_token = routed_bytes / double(x.top_k);
  const int64_t experts = x.model.num_experts;
  const double probability_bytes =
      x.flex_backend == FlexBackend::hybridep ? 4.0 * double(x.tp * experts) / double(x.ep_nodes) : 0;
  const auto add = [&](double bytes, LayerGroup group) {
    if (probability_bytes == 0) {
      pass.tp.push_back({TaskKind::ALLTOALL, 2, bytes, false, group});
      return;
    }
    pass.tp.push_back({TaskKind::ALLTOALL, 1, bytes * (1 + probability_bytes / row_bytes), false, group});
    pass.tp.push_back({TaskKind::ALLTOALL, 1, bytes, false, group});
  };
  if (x.ep_nodes == 1) {
    add(routed_bytes * exchanged_row_fraction(x), LayerGroup::expert);
    return;
  }
  add(per_token * expected_destinations(experts, x.top_k, x.ep_nodes), LayerGroup::expert_across);
  if (x.ep / x.ep_nodes > 1)
    add(per_token * expected_destinations(experts, x.top_k, x.ep), LayerGroup::expert_node);
}

}  // namespace

// The router (a bf16 GEMM to one logit per expert, softmax and top-k), the
// tokens permuted into expert order (and, from several ranks, sorted by
// local expert; flex: the received tokens permuted once into local-expert
// order, Megatron-LM d98e8a64 moe/token_dispatcher.py
// _DeepepManager.get_permuted_hidden_states_by_experts), the routed experts
// as grouped GEMMs over the busiest rank's rows, the outputs put back in
// token order and summed with their router weights; shared experts a dense
// MLP beside them. The exchanges between are collectives (add_moe_collectives).
std::vector<Step> moe_steps(const Shard& x) {
  const double e = x.element_bytes;
  const int64_t tokens = x.router_tokens(), routed = tokens * x.top_k, experts = x.model.num_experts;
  const auto expert_linear = [&](const std::string& name, int64_t n, int64_t k) {
    return MatMul{name, x.expert_rows, n, k, x.local_experts, true, x.quantized(), false, x.counted_expert_rows,
                  x.expert_gemm_streams};
  };
  const bool flex = x.dispatcher == MoeDispatcher::flex;
  const bool sorts = x.ep > 1 && x.local_experts > 1 && !flex;
  const int64_t received = exchanged_rows(x) * x.hidden;
  const int64_t permuted = flex ? x.rank_expert_rows() : routed;  // after the exchange, or before it
  std::vector<Step> steps = {MatMul{"router", tokens, experts, x.hidden}, memory_op("router_topk", tokens * experts, 2 * e),
                             memory_op("moe_permute", permuted * x.hidden, 2 * e)};
  if (sorts) steps.push_back(memory_op("moe_sort_chunks", received, 2 * e));
  steps.insert(steps.end(), {expert_linear("expert_fc1", x.expert_fc1_width(), x.hidden),
                             activation_op(x, "expert_", x.rank_expert_rows() * x.expert_ffn),
                             expert_linear("expert_fc2", x.hidden, x.expert_ffn)});
  if (sorts) steps.push_back(memory_op("moe_unsort_chunks", received, 2 * e));
  // Reads top-k rows per token, writes one.
  steps.push_back(memory_op("moe_unpermute", permuted * x.hidden, e * (1 + 1.0 / double(x.top_k))));
  if (x.shared_ffn == 0) return steps;
  steps.insert(steps.end(), {layer_linear(x, "shared_fc1", x.tokens(), x.shared_fc1_width(), x.hidden, false),
                             activation_op(x, "shared_", x.tokens() * x.shared_ffn),
                             layer_linear(x, "shared_fc2", x.tokens(), x.hidden, x.shared_ffn, false)});
  return steps;
}

// Over EP: all-to-all dispatch and combine (each the busiest rank's rows),
// or the allgather dispatcher's gather of every rank's tokens and
// reduce-scatter of the outputs; the backward runs the same exchanges the
// other way. flex (DeepEP, add_deepep_exchanges): a row per token and
// destination rank. Over TP (experts sharded like a dense MLP): sequence
// parallelism's gather of the received rows and reduce-scatter of the
// outputs, or the all-reduces of a row-parallel output and of a
// column-parallel input's gradient; shared experts cross TP as a dense MLP.
// Megatron's flex dispatcher runs one group over TP x EP, each token sent to
// every TP rank of a destination: the same bytes reach each rank as through
// the EP exchange and the TP gather of those rows.
void add_moe_collectives(const Shard& x, Pass& forward, Pass& backward) {
  const double row_bytes = double(x.hidden) * x.element_bytes;
  if (x.ep > 1) {
    for (Pass* pass : {&forward, &backward}) {
      if (x.dispatcher == MoeDispatcher::flex) {
        add_deepep_exchanges(x, *pass);
      } else if (x.dispatcher == MoeDispatcher::alltoall) {
        pass->tp.push_back({TaskKind::ALLTOALL, 2, double(exchanged_rows(x)) * row_bytes, false, LayerGroup::expert});
      } else {
        const double gathered = double(x.ep) * double(x.router_tokens()) * row_bytes;
        pass->tp.push_back({TaskKind::ALLGATHER, 1, gathered, false, LayerGroup::expert});
        pass->tp.push_back({TaskKind::REDUCESCATTER, 1, gathered, false, LayerGroup::expert});
      }
    }
  }
  if (x.tp > 1) {
    const double rows_bytes = double(x.rank_expert_rows()) * exchanged_row_fraction(x) * row_bytes;
    for (Pass* pass : {&forward, &backward}) {
      if (x.sequence_parallel) {
        pass->tp.push_back({TaskKind::ALLGATHER, 1, rows_bytes});
        pass->tp.push_back({TaskKind::REDUCESCATTER, 1, rows_bytes});
      } else {
        pass->tp.push_back({TaskKind::ALLREDUCE, 1, rows_bytes});
      }
    }
  }
  if (x.shared_ffn == 0) return;
  add_tp_boundary(TpBoundary::enter, 1, x, Linears::transformer_engine, forward, backward);
  add_tp_boundary(TpBoundary::leave, 1, x, Linears::transformer_engine, forward, backward);
}

}  // namespace simtrain::layers
