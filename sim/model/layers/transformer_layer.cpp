#include "sim/model/layers/transformer_layer.hpp"

#include <algorithm>

#include "sim/model/layers/attention_ops.hpp"
#include "sim/model/layers/context_parallel_ops.hpp"
#include "sim/model/layers/latent_attention_ops.hpp"
#include "sim/model/layers/layer_memory.hpp"
#include "sim/model/layers/mlp_ops.hpp"
#include "sim/model/layers/moe_ops.hpp"
#include "sim/model/parameter_count.hpp"

namespace simtrain::layers {

namespace {

std::vector<Step> layer_steps(const Shard& x, const std::vector<Step>& core) {
  const double e = x.element_bytes;
  // Residual add reads two tensors and writes one, plus the dropout mask.
  const Op bias_dropout_add = memory_op("bias_dropout_add", x.local_tokens() * x.hidden, 3 * e + kMaskBytes);
  std::vector<Step> steps = {linear_input_norm(x, "ln1")};
  const std::vector<Step> projections = x.latent_attention() ? latent_attention_projections(x) : attention_projections(x);
  steps.insert(steps.end(), projections.begin(), projections.end());
  steps.insert(steps.end(), core.begin(), core.end());
  steps.insert(steps.end(), {layer_linear(x, "proj", x.tokens(), x.hidden, x.o_width(), false), bias_dropout_add});
  std::vector<Step> mlp;
  if (x.moe()) {
    steps.push_back(memory_op("ln2", x.local_tokens() * x.hidden, 2 * e));  // the router reads it in bf16
    mlp = moe_steps(x);
  } else {
    mlp = mlp_steps(x);
  }
  steps.insert(steps.end(), mlp.begin(), mlp.end());
  steps.push_back(bias_dropout_add);
  return steps;
}

// What selective recompute runs again before the backward: its modules'
// ops (layer_memory.cpp says which it leaves unstored), with the collectives they issue.
Pass selective_recompute(const Shard& x, const TrainingConfig& training, const std::vector<Step>& steps,
                         const std::vector<Step>& core) {
  Pass pass, unused;
  const auto rerun = [&](const std::vector<std::string>& names) {
    for (const Step& step : steps)
      if (std::find(names.begin(), names.end(), step_name(step)) != names.end()) add_forward(step, x, pass);
  };
  if (training.recomputes("core_attn")) {
    for (const Step& step : core) add_forward(step, x, pass);
    add_cp_exchange(x, pass, false);  // recomputed attention gathers K/V again
  }
  if (training.recomputes("layernorm")) {
    if (x.latent_attention()) rerun({"ln1"});
    if (x.moe()) rerun({"ln2"});
  }
  if (training.recomputes("mla_up_proj") && x.latent_attention()) {
    rerun({"q_up", "q_proj", "kv_up"});
    add_latent_attention_collectives(x, pass, unused);
  }
  if (training.recomputes("mlp") && !x.moe()) {
    rerun({"ln2", "fc1", "swiglu", "gelu", "fc2"});
    add_tp_boundary(TpBoundary::enter, 1, x, Linears::transformer_engine, pass, unused);
    add_tp_boundary(TpBoundary::leave, 1, x, Linears::transformer_engine, pass, unused);
  }
  if (training.recomputes("moe_act") && x.moe()) rerun({"expert_swiglu", "expert_gelu"});
  return pass;
}

}  // namespace

UnitWork layer_work(const Shard& x, const TrainingConfig& training) {
  const std::vector<Step> core = attention_core(x, training.flash_attention);
  const std::vector<Step> steps = layer_steps(x, core);
  UnitWork work;
  add_passes(steps, x, work);
  const LayerParameters parameters =
      x.moe() ? moe_layer_parameters(x.model, x.tp, x.local_experts) : dense_layer_parameters(x.model, x.tp);
  work.backward_weight.ops.push_back(
      memory_op("norm_bias_wgrad", int64_t(parameters.vectors), kGradAccumulateBytes));
  // qkv (latent attention's projections: below) and proj; a dense MLP's fc1 and fc2.
  const int dense_mlp = x.moe() ? 0 : 1;
  add_tp_boundary(TpBoundary::enter, (x.latent_attention() ? 0 : 1) + dense_mlp, x, Linears::transformer_engine,
                  work.forward, work.backward_input);
  add_tp_boundary(TpBoundary::leave, 1 + dense_mlp, x, Linears::transformer_engine, work.forward, work.backward_input);
  if (x.latent_attention()) add_latent_attention_collectives(x, work.forward, work.backward_input);
  if (x.moe()) add_moe_collectives(x, work.forward, work.backward_input);
  add_cp_exchange(x, work.forward, false);
  add_cp_exchange(x, work.backward_input, true);
  if (training.recompute == Recompute::selective) work.recompute = selective_recompute(x, training, steps, core);
  if (training.recompute == Recompute::full) work.recompute = work.forward;
  work.parameters = parameters.total();
  work.expert_parameters = parameters.experts();
  if (x.quantized()) work.low_precision_weights = parameters.linear_weights();
  work.activation_bytes = layer_activation_bytes(x, training);
  work.weight_grad_activation_bytes = linear_input_bytes(x);
  return work;
}

}  // namespace simtrain::layers
