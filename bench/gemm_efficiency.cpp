// The GEMM model's efficiency (achieved FLOP/s over the spec-sheet peak) for
// the GEMMs of one GPT-3 175B layer on one tensor-parallel rank (TP 8), at
// micro-batch sizes 1, 2 and 4 (M = b x s = 2048 .. 8192), on each built-in GPU.
//   simtrain_bench_gemm_efficiency
#include <cstdio>
#include <string>

#include "sim/model/cost_model.hpp"
#include "sim/model/gemm_model.hpp"
#include "sim/model/workload.hpp"

int main() {
  using namespace simtrain;
  std::printf("%-10s %-12s %-20s %-8s %6s %6s %11s\n", "GPU", "GEMM", "M x N x K", "tile", "tiles", "waves",
              "efficiency");
  for (const GpuSpec& gpu : builtin_gpus()) {
    const double hbm_fraction = RooflineEfficiency{}.hbm_fraction(gpu);
    for (const int micro_batch : {1, 2, 4}) {
      const Scenario scenario = load_scenario("gpt3-175b-1024xh100", {"gpu=" + gpu.name, "micro_batch_size=" +
                                                                                          std::to_string(micro_batch)});
      const Workload workload = build_workload(scenario);
      const UnitWork& layer = workload.layer;
      for (const Pass* pass : {&layer.forward, &layer.backward_input, &layer.backward_weight}) {
        for (const Op& op : pass->ops) {
          if (op.op_class != OpClass::gemm) continue;
          const GemmShape shape{op.shape[0], op.shape[1], op.shape[2]};
          const GemmTime t = gemm_time(gpu, shape, op.bytes, Dtype::bf16, hbm_fraction, RooflineEfficiency{}.min_kernel_seconds);
          const std::string dims = std::to_string(shape.m) + " x " + std::to_string(shape.n) + " x " +
                                   std::to_string(shape.k);
          const std::string tile = std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n);
          std::printf("%-10s %-12s %-20s %-8s %6lld %6lld %10.1f%%%s\n", gpu.name.c_str(), op.name.c_str(),
                      dims.c_str(), tile.c_str(), (long long)t.tiles, (long long)t.waves,
                      100 * op.flops / t.seconds / gpu.peak_bf16_flops,
                      t.memory_seconds > t.compute_seconds ? "  (memory-bound)" : "");
        }
      }
    }
  }
}
