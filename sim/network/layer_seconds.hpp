#pragma once
// One transformer layer's forward and backward on one TP rank, as a
// layer-level measurement times it (Korthikanti et al. 2022, Table 4): the
// layer's ops back to back, plus its TP collectives over the TP group in
// closed form. Those Megatron overlaps with compute (`overlapped`, and the
// input-gradient all-reduces beside the weight-gradient GEMMs of a whole
// backward) are not added. Header-only: bench/validation.cpp prints it and
// tests/test_gpu_calibration.cpp derives A100's sustained clock from it.
#include <numeric>
#include <vector>

#include "sim/model/kernel_calibration.hpp"
#include "sim/network/collective_plan.hpp"
#include "sim/network/fabric.hpp"

namespace simtrain {

struct LayerSeconds {
  LayerComputeSeconds compute;
  double forward_tp = 0, backward_tp = 0;  // blocking TP collectives
  double forward() const { return compute.forward + forward_tp; }
  double backward() const { return compute.backward + backward_tp; }
};

// `scenario`'s layer (its workload's) on the first TP group of its fabric, ring all-reduces.
inline LayerSeconds layer_seconds(const Scenario& scenario, const Workload& workload, const CostModel& model) {
  const Fabric fabric(scenario.cluster.topology, static_cast<int>(scenario.cluster.num_gpus));
  std::vector<int> tp_group(static_cast<size_t>(scenario.parallel.tensor));
  std::iota(tp_group.begin(), tp_group.end(), 0);
  const auto blocking_tp_seconds = [&](const Pass& pass) {
    double seconds = 0;
    for (const TpCollectives& c : pass.tp)
      if (!c.beside_compute(true))  // the layer's whole backward: its weight gradients included
        seconds +=
            closed_form_seconds(plan_collective(c.kind, tp_group, c.bytes, c.count, Algorithm::ring, fabric), fabric);
    return seconds;
  };
  const UnitWork& layer = workload.layer;
  return {layer_compute_seconds(model, layer, scenario.training.dtype), blocking_tp_seconds(layer.forward),
          blocking_tp_seconds(layer.backward_input) + blocking_tp_seconds(layer.backward_weight)};
}

}  // namespace simtrain
