// Where one transformer layer's time goes: every op of each pass of one
// layer of a scenario (on one tensor-parallel rank, one micro-batch), with
// its time from the roofline/GEMM model, its achieved FLOP/s (as executed:
// causal attention's half of the score products) or bandwidth and its share of the layer.
//   simtrain_bench_layer_ops SCENARIO [KEY=VALUE ...]
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sim/base/input_error.hpp"
#include "sim/model/cost_model.hpp"
#include "sim/model/workload.hpp"

int main(int argc, char** argv) {
  using namespace simtrain;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SCENARIO [KEY=VALUE ...]\n", argv[0]);
    return 2;
  }
  try {
    const Scenario scenario = load_scenario(argv[1], std::vector<std::string>(argv + 2, argv + argc));
    const Workload workload = build_workload(scenario);
    const RooflineEfficiency efficiency;
    const RooflineModel model(scenario.cluster.gpu, efficiency);
    const Dtype dtype = scenario.training.dtype;
    const UnitWork& layer = workload.layer;
    struct NamedPass {
      const char* name;
      const Pass* pass;
    };
    const std::vector<NamedPass> passes = {{"forward", &layer.forward},
                                           {"recompute", &layer.recompute},
                                           {"backward-input", &layer.backward_input},
                                           {"backward-weight", &layer.backward_weight}};
    double layer_seconds = 0;
    for (const NamedPass& p : passes) layer_seconds = accumulate_op_seconds(layer_seconds, model, p.pass->ops, dtype);
    std::printf("%s: one layer, one micro-batch, one TP rank: %.3f ms of compute\n", scenario.name.c_str(),
                1e3 * layer_seconds);
    std::printf("%-16s %-24s %-11s %10s %7s %12s\n", "pass", "op", "class", "ms", "share", "achieved");
    for (const NamedPass& p : passes) {
      for (const Op& op : p.pass->ops) {
        const OpTime t = model.op_time(op, op_dtype(op, dtype));
        const bool counts_flops = op.op_class == OpClass::gemm || op.op_class == OpClass::attention;
        // FLOPs as executed: a causal attention kernel computes a share of the s x s products Megatron counts.
        const double executed = (op.flops + op.uncounted_flops) *
                                (op.op_class == OpClass::attention ? efficiency.causal_fraction : 1);
        const double rate = counts_flops ? executed / t.seconds / 1e12 : op.bytes / t.seconds / 1e9;
        std::printf("%-16s %-24s %-11s %10.3f %6.1f%% %7.1f %s\n", p.name, op.name.c_str(),
                    to_string(op.op_class).c_str(), 1e3 * t.seconds, 100 * t.seconds / layer_seconds, rate,
                    counts_flops ? "TFLOP/s" : "GB/s");
      }
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
