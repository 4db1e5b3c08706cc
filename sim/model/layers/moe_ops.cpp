#include "sim/model/layers/moe_ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/model/layers/mlp_ops.hpp"

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
  x.expert_gemm_streams = scenario.software.moe_grouped_gemm ? kTransformerEngineComputeStreams : 1;
  const double mean = double(x.ep) * double(x.tokens()) * double(x.top_k) / double(m.num_experts);
  const double cap = t.capacity_factor > 0 ? t.capacity_factor : std::numeric_limits<double>::infinity();
  const double rank_rows =
      mean * (double(x.local_experts - 1) * std::min(1.0, cap) + std::min(t.moe_load_imbalance, cap));
  x.expert_rows = std::max<int64_t>(1, int64_t(std::ceil(rank_rows / double(x.local_experts))));
  x.counted_expert_rows = mean / double(x.expert_rows);
}

int64_t exchanged_rows(const Shard& x) { return x.rank_expert_rows() / (x.sequence_parallel ? x.tp : 1); }

// The router (a bf16 GEMM to one logit per expert, softmax and top-k), the
// tokens permuted into expert order (and, from several ranks, sorted by
// local expert), the routed experts as grouped GEMMs over the busiest rank's
// rows, the outputs put back in token order and summed with their router
// weights; shared experts a dense MLP beside them. The exchanges between are
// collectives (add_moe_collectives).
std::vector<Step> moe_steps(const Shard& x) {
  const double e = x.element_bytes;
  const int64_t tokens = x.router_tokens(), routed = tokens * x.top_k, experts = x.model.num_experts;
  const auto expert_linear = [&](const std::string& name, int64_t n, int64_t k) {
    return MatMul{name, x.expert_rows, n, k, x.local_experts, true, x.quantized(), false, x.counted_expert_rows,
                  x.expert_gemm_streams};
  };
  const bool sorts = x.ep > 1 && x.local_experts > 1;
  const int64_t received = exchanged_rows(x) * x.hidden;
  std::vector<Step> steps = {MatMul{"router", tokens, experts, x.hidden}, memory_op("router_topk", tokens * experts, 2 * e),
                             memory_op("moe_permute", routed * x.hidden, 2 * e)};
  if (sorts) steps.push_back(memory_op("moe_sort_chunks", received, 2 * e));
  steps.insert(steps.end(), {expert_linear("expert_fc1", x.expert_fc1_width(), x.hidden),
                             activation_op(x, "expert_", x.rank_expert_rows() * x.expert_ffn),
                             expert_linear("expert_fc2", x.hidden, x.expert_ffn)});
  if (sorts) steps.push_back(memory_op("moe_unsort_chunks", received, 2 * e));
  // Reads top-k rows per token, writes one.
  steps.push_back(memory_op("moe_unpermute", routed * x.hidden, e * (1 + 1.0 / double(x.top_k))));
  if (x.shared_ffn == 0) return steps;
  steps.insert(steps.end(), {layer_linear(x, "shared_fc1", x.tokens(), x.shared_fc1_width(), x.hidden, false),
                             activation_op(x, "shared_", x.tokens() * x.shared_ffn),
                             layer_linear(x, "shared_fc2", x.tokens(), x.hidden, x.shared_ffn, false)});
  return steps;
}

// Over EP: all-to-all dispatch and combine (each the busiest rank's rows),
// or the allgather dispatcher's gather of every rank's tokens and
// reduce-scatter of the outputs; the backward runs the same exchanges the
// other way. Over TP (experts sharded like a dense MLP): sequence
// parallelism's gather of the received rows and reduce-scatter of the
// outputs, or the all-reduces of a row-parallel output and of a
// column-parallel input's gradient; shared experts cross TP as a dense MLP.
void add_moe_collectives(const Shard& x, Pass& forward, Pass& backward) {
  const double row_bytes = double(x.hidden) * x.element_bytes;
  if (x.ep > 1) {
    for (Pass* pass : {&forward, &backward}) {
      if (x.dispatcher == MoeDispatcher::alltoall) {
        pass->tp.push_back({TaskKind::ALLTOALL, 2, double(exchanged_rows(x)) * row_bytes, false, LayerGroup::expert});
      } else {
        const double gathered = double(x.ep) * double(x.router_tokens()) * row_bytes;
        pass->tp.push_back({TaskKind::ALLGATHER, 1, gathered, false, LayerGroup::expert});
        pass->tp.push_back({TaskKind::REDUCESCATTER, 1, gathered, false, LayerGroup::expert});
      }
    }
  }
  if (x.tp > 1) {
    const double rows_bytes = double(x.rank_expert_rows()) * row_bytes;
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
