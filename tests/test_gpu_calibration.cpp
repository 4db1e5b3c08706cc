// Each built-in GPU's sustained tensor clock against its derivation from
// its source (docs/gpus.md). H200's comes from GEMMs measured on it
// (tests/test_gemm_model.cpp); MI300X's from AMD's published sustained-load
// GEMMs; A100's, with no kernel profile of an A100, from one published
// layer-level measurement: Korthikanti et al. 2022, Table 4, the 22B model's
// layer (TP 8, no recompute), forward and backward together; H100's, H800's,
// B200's and GB200's are H200's carried over. The end-to-end rows that check
// them (bench/validation.cpp) set nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/base/input_error.hpp"
#include "sim/model/gemm_model.hpp"
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

// Where nothing of a GPU's own under load is published, H200's measured
// clocks are carried over as the same fractions of its tensor clock
// (carried_over_sustained_clock_hz), and the GPU says so.
TEST(GpuCalibration, CarriedOverClocksAreH200sFractionsOfTheTensorClock) {
  const GpuSpec& h200 = *builtin_gpu("H200");
  ASSERT_EQ(h200.compute_provenance, ComputeProvenance::measured);
  for (const char* name : {"H100-SXM", "H800", "B200", "GB200"}) {
    const GpuSpec& gpu = *builtin_gpu(name);
    EXPECT_EQ(gpu.compute_provenance, ComputeProvenance::carried_over) << name;
    for (const Dtype dtype : {Dtype::bf16, Dtype::fp8})  // the built-in figures are whole MHz
      EXPECT_NEAR(sustained_clock_hz(gpu, dtype), carried_over_sustained_clock_hz(h200, gpu, dtype), 0.5e6) << name;
  }
  // The same die at the same clock (H100, H800) takes H200's clocks exactly.
  EXPECT_DOUBLE_EQ(carried_over_sustained_clock_hz(h200, *builtin_gpu("H100-SXM"), Dtype::fp8), 1178e6);
}

// AMD, "Measuring Max-Achievable FLOPs - Part 2" (rocm.blogs.amd.com, 28 Feb
// 2025), Table 1 and Appendix B: MI300X under 1 s of hipBLASLt load, bf16
// 708 TFLOP/s at 4096 x 4864 x 32896 and fp8 1,273 at 4096 x 3648 x 32896,
// each shape 16 x 19 tiles (256 x 256 and 256 x 192), one per CU.
PublishedGemm amd_maf(Dtype dtype) {
  const std::string source = "rocm.blogs.amd.com measuring-max-achievable-flops-part2";
  if (dtype == Dtype::fp8) return {{4096, 3648, 32896}, Dtype::fp8, 1273e12, source, {{256, 192}}};
  return {{4096, 4864, 32896}, Dtype::bf16, 708e12, source, {{256, 256}}};
}

TEST(GpuCalibration, MI300XClocksAreTheirDerivationFromAmdsSustainedGemms) {
  const GpuSpec& mi300x = *builtin_gpu("MI300X");
  EXPECT_EQ(mi300x.compute_provenance, ComputeProvenance::published_sustained);
  for (const auto& [dtype, clock_amd_read_hz] : {std::pair{Dtype::bf16, 1207e6}, {Dtype::fp8, 1230e6}}) {
    const double derived_hz = derive_sustained_clock_hz_from_gemm(mi300x, amd_maf(dtype));
    EXPECT_NEAR(sustained_clock_hz(mi300x, dtype), derived_hz, 0.5e6) << to_string(dtype);
    // Below the clock AMD read during the runs: the rest is the kernels' own efficiency.
    EXPECT_LT(derived_hz, clock_amd_read_hz) << to_string(dtype);
    EXPECT_GT(derived_hz, 0.8 * clock_amd_read_hz) << to_string(dtype);
  }
}

// The derivation's clock is the one at which the GEMM model gives the published rate.
TEST(GpuCalibration, TheDerivedClockGivesThePublishedGemmItsRate) {
  GpuSpec gpu = *builtin_gpu("MI300X");
  gpu.achievable_matmul_bf16_flops = 0;
  PublishedGemm gemm = amd_maf(Dtype::bf16);
  for (const double rate : {600e12, 708e12, 800e12}) {
    gemm.measured_flops = rate;
    gpu.sustained_tensor_clock_hz = derive_sustained_clock_hz_from_gemm(gpu, gemm);
    const double seconds =
        gemm_time(gpu, gemm.shape, gemm_bytes(gemm.shape, gemm.dtype), gemm.dtype, RooflineEfficiency{}.hbm_fraction(gpu),
                  RooflineEfficiency{}.min_kernel_seconds, gemm.tiles)
            .seconds;
    EXPECT_NEAR(2.0 * gemm.shape.m * gemm.shape.n * gemm.shape.k / seconds, rate, 1e-6 * rate);
  }
}

TEST(GpuCalibration, AGemmFasterThanTheTensorClockAllowsIsRefused) {
  PublishedGemm gemm = amd_maf(Dtype::bf16);
  gemm.measured_flops = 2000e12;  // above MI300X's 1,307.4 TFLOP/s peak
  try {
    derive_sustained_clock_hz_from_gemm(*builtin_gpu("MI300X"), gemm);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "rocm.blogs.amd.com measuring-max-achievable-flops-part2: gemm: no sustained clock up to the tensor "
                 "clock gives 2000.0 TFLOP/s");
  }
}

// Every built-in GPU names where its sustained clock comes from; none is a spec sheet's alone.
TEST(GpuCalibration, EveryBuiltInGpuSaysWhereItsClockComesFrom) {
  for (const GpuSpec& gpu : builtin_gpus()) {
    EXPECT_NE(gpu.compute_provenance, ComputeProvenance::spec_sheet) << gpu.name;
    EXPECT_NE(gpu.compute_provenance, ComputeProvenance::scenario) << gpu.name;
    EXPECT_FALSE(gpu.compute_source.empty()) << gpu.name;
    EXPECT_LT(gpu.sustained_tensor_clock_hz, gpu.tensor_clock_hz) << gpu.name;
  }
}

// HBM efficiency: H200's measured copy, and for A100, H100 (H800) and MI300X
// the BabelStream Copy the Azure AI Benchmarking Guide published for each
// and for H200 (Azure_Results/ND_*_results.md, "HBM Bandwidth"), relative
// to H200's: A100-SXM4-80GB 1.61, H100 80GB 2.90, MI300X 4.11, H200 4.01 TB/s.
TEST(GpuCalibration, HbmEfficienciesAreTheirDerivationFromPublishedCopies) {
  const PublishedCopy h200{4.01e12, 4800e9};
  const struct {
    const char* name;
    PublishedCopy copy;
  } published[] = {{"A100-80GB", {1.61e12, 2039e9}},
                   {"H100-SXM", {2.90e12, 3350e9}},
                   {"H800", {2.90e12, 3350e9}},  // the H100's 80 GB of HBM3 at 3.35 TB/s
                   {"MI300X", {4.11e12, 5300e9}}};
  for (const auto& [name, copy] : published)  // the built-in figures have three decimals
    EXPECT_NEAR(builtin_gpu(name)->hbm_efficiency, hbm_efficiency_from_published_copy(copy, h200), 0.0005) << name;
  const RooflineEfficiency e;
  for (const char* measured_or_none : {"H200", "B200", "GB200"}) {
    EXPECT_EQ(builtin_gpu(measured_or_none)->hbm_efficiency, 0) << measured_or_none;
    EXPECT_DOUBLE_EQ(e.hbm_fraction(*builtin_gpu(measured_or_none)), e.memory) << measured_or_none;
  }
  // H200's own published copy gives its measured share back.
  EXPECT_DOUBLE_EQ(hbm_efficiency_from_published_copy(h200, h200), e.memory);
}

TEST(GpuCalibration, AScenarioGpuMayStateItsHbmEfficiency) {
  nlohmann::json gpu = {{"peak_bf16_tflops", 989},  {"hbm_GBps", 3350},          {"memory_GiB", 80},
                        {"sm_count", 132},          {"tensor_clock_MHz", 1830}, {"sustained_tensor_clock_MHz", 1288},
                        {"hbm_efficiency", 0.9}};
  EXPECT_DOUBLE_EQ(gpu_from_json(gpu, "s.json", "cluster.gpu").hbm_efficiency, 0.9);
  gpu["hbm_efficiency"] = 1.5;
  try {
    gpu_from_json(gpu, "s.json", "cluster.gpu");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "s.json: cluster.gpu.hbm_efficiency: must be at most 1, got 1.5");
  }
}

}  // namespace
}  // namespace simtrain
