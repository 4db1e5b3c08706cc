#include "sim/model/layers/latent_attention_ops.hpp"

namespace simtrain::layers {

// Down-projections to the query latent and to the key-value latent with the
// rotary key all heads share, each replicated over TP (Megatron-Core's
// "duplicated" linears, on the sequence-parallel rank's own tokens), the
// latents normed, then column-parallel up-projections to this rank's heads
// (keys without their rotary part, and values). Without a query latent
// (q_lora_rank 0) one column-parallel query projection.
std::vector<Step> latent_attention_projections(const Shard& x) {
  const double e = x.element_bytes;
  const int64_t local = x.local_tokens();
  std::vector<Step> steps;
  if (x.q_rank)
    steps = {layer_linear(x, "q_down", local, x.q_rank, x.hidden, true), memory_op("q_norm", local * x.q_rank, 2 * e),
             layer_linear(x, "q_up", x.tokens(), x.q_width(), x.q_rank, false)};
  else
    steps = {layer_linear(x, "q_proj", x.tokens(), x.q_width(), x.hidden, true)};
  const int64_t kv_up_width = x.heads * (x.head_dim - x.rope_dim + x.v_head_dim);
  steps.insert(steps.end(), {layer_linear(x, "kv_down", local, x.kv_rank + x.rope_dim, x.hidden, true),
                             memory_op("kv_norm", local * x.kv_rank, 2 * e),
                             layer_linear(x, "kv_up", x.tokens(), kv_up_width, x.kv_rank, false)});
  return steps;
}

// The up-projections enter the column-parallel region from the latents (the
// query's from the layer input without a query latent), and the rotary key
// crosses it too (every rank's heads read it; sequence parallelism gathers
// it). The proj linear leaves it as usual.
void add_latent_attention_collectives(const Shard& x, Pass& forward, Pass& backward) {
  add_tp_boundary_of_width(TpBoundary::enter, 1, x.q_rank ? x.q_rank : x.hidden, x, Linears::transformer_engine,
                           forward, backward);
  add_tp_boundary_of_width(TpBoundary::enter, 1, x.kv_rank, x, Linears::transformer_engine, forward, backward);
  add_tp_boundary_of_width(TpBoundary::enter, 1, x.rope_dim, x, Linears::transformer_engine, forward, backward, false);
}

}  // namespace simtrain::layers
