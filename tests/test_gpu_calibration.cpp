// Each built-in GPU's sustained tensor clock against its derivation from
// its source (docs/gpus.md). H200's (and H100's, H800's) comes from GEMMs
// measured on it (tests/test_gemm_model.cpp); A100's, with no kernel profile
// of an A100, from one published layer-level measurement: Korthikanti et
// al. 2022, Table 4, the 22B model's layer (TP 8, no recompute), forward and
// backward together. The end-to-end rows that check it
// (bench/validation.cpp) set nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/base/input_error.hpp"
#include "sim/model/kernel_calibration.hpp"
#include "sim/network/layer_seconds.hpp"
#include "sim/scenario/gpu_spec.hpp"

namespace simtrain {
namespace {

nlohmann::json korthikanti_table4_layer() {
  std::ifstream in(std::string(SIMTRAIN_SOURCE_DIR) + "/tests/validation/korthikanti_2022.json");
  return nlohmann::json::parse(in).at("per_layer");
}

struct Table4Layer {
  Scenario scenario = load_scenario("korthikanti-22b-8xa100", {"recompute_granularity=none"});
  Workload workload = build_workload(scenario);
  double published_seconds = 0;  // forward + backward
};

Table4Layer table4_layer() {
  Table4Layer layer;
  const nlohmann::json published = korthikanti_table4_layer();
  layer.published_seconds =
      1e-3 * (published.at("forward_ms").get<double>() + published.at("backward_ms_no_recompute").get<double>());
  return layer;
}

TEST(GpuCalibration, A100SustainedClockIsItsDerivationFromKorthikantiTable4Layer) {
  const Table4Layer t = table4_layer();
  ASSERT_EQ(t.scenario.cluster.gpu.name, "A100-80GB");
  EXPECT_DOUBLE_EQ(t.published_seconds, 19.6e-3);  // 7.7 ms forward + 11.9 ms backward
  const GpuSpec& a100 = *builtin_gpu("A100-80GB");
  // The blocking TP all-reduces do not depend on the clock: the compute is the rest.
  const LayerSeconds at_builtin = layer_seconds(t.scenario, t.workload, RooflineModel(a100));
  const double compute_seconds = t.published_seconds - at_builtin.forward_tp - at_builtin.backward_tp;
  const double derived_hz = derive_sustained_clock_hz_from_layer(t.workload.layer, t.scenario.training.dtype, a100,
                                                                 compute_seconds, "korthikanti_2022.json");
  EXPECT_NEAR(a100.sustained_tensor_clock_hz, derived_hz, 0.5e6);  // the built-in figure is whole MHz
  // At the built-in clock the layer takes the published time, forward and backward together.
  EXPECT_NEAR(at_builtin.forward() + at_builtin.backward(), t.published_seconds, 0.001 * t.published_seconds);
  EXPECT_EQ(a100.sustained_fp8_tensor_clock_hz, 0);  // no fp8 tensor cores: one clock
}

// The derivation's clock is the one at which the model gives the target.
TEST(GpuCalibration, TheDerivedClockGivesTheLayerItsTargetTime) {
  const Table4Layer t = table4_layer();
  GpuSpec gpu = t.scenario.cluster.gpu;
  for (const double target_seconds : {16e-3, 18e-3, 20e-3}) {
    gpu.sustained_tensor_clock_hz =
        derive_sustained_clock_hz_from_layer(t.workload.layer, t.scenario.training.dtype, gpu, target_seconds, "test");
    const LayerComputeSeconds s = layer_compute_seconds(RooflineModel(gpu), t.workload.layer, t.scenario.training.dtype);
    EXPECT_NEAR(s.forward + s.backward, target_seconds, 1e-9) << target_seconds;
  }
}

TEST(GpuCalibration, ALayerFasterThanTheTensorClockAllowsIsRefused) {
  const Table4Layer t = table4_layer();
  try {
    derive_sustained_clock_hz_from_layer(t.workload.layer, t.scenario.training.dtype, t.scenario.cluster.gpu, 1e-3,
                                         "korthikanti_2022.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "korthikanti_2022.json: layer: no sustained clock up to the tensor clock gives its compute 1.00 ms");
  }
}

}  // namespace
}  // namespace simtrain
