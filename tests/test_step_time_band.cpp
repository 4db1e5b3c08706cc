// The report's step-time error bands: which class a scenario falls in, the
// extremes over a class's rows, no band where no row of the class exists,
// and the band file read back as written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/step/step_time_band.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using testing::HasSubstr;

// The class of a built-in GPU's figures, as the GPU table gives them.
BandClass class_of(const std::string& gpu, bool moe) {
  const GpuSpec& spec = *builtin_gpu(gpu);
  return {.gpu_figures = spec.compute_provenance, .gpu_figures_source = spec.compute_source, .mixture_of_experts = moe};
}

std::vector<BandRow> three_classes() {
  return {{"a100-row-1", "A100-80GB", class_of("A100-80GB", false), 0.054},
          {"h100-dense-1", "H100-SXM", class_of("H100-SXM", false), 0.014},
          {"a100-row-2", "A100-80GB", class_of("A100-80GB", false), -0.009},
          {"h100-moe", "H100-SXM", class_of("H100-SXM", true), 2.226},
          {"h800-dense", "H800", class_of("H800", false), 0.058},
          {"a100-row-3", "A100-80GB", class_of("A100-80GB", false), 0.089}};
}

TEST(StepTimeBand, ClassIsWhereTheGpuFiguresComeFromAndWhetherTheModelHasExperts) {
  EXPECT_EQ(band_class(load_scenario("nemo-llama3-8b-8xh100")), class_of("H100-SXM", false));
  EXPECT_EQ(band_class(load_scenario("qwen3-30b-a3b-16xh100")), class_of("H100-SXM", true));
  EXPECT_EQ(band_class(load_scenario("megatron-1.7b-32xa100")), class_of("A100-80GB", false));
  // H800 is H100's die with H100's figures: one class; another source is another class.
  EXPECT_EQ(class_of("H800", false), class_of("H100-SXM", false));
  BandClass other_source = class_of("H100-SXM", false);
  other_source.gpu_figures_source += " (elsewhere)";
  EXPECT_FALSE(other_source == class_of("H100-SXM", false));
  nlohmann::json document = fixtures::scenario_json(1, 1, 2, 2, "1f1b");
  document["cluster"]["gpu"] = {{"name", "mine"},         {"peak_bf16_tflops", 500}, {"hbm_GBps", 2000},
                                {"memory_GiB", 80},       {"sm_count", 100},         {"tensor_clock_MHz", 1500},
                                {"sustained_tensor_clock_MHz", 1200}};
  EXPECT_EQ(band_class(fixtures::scenario_from(document)).gpu_figures, ComputeProvenance::scenario);
}

TEST(StepTimeBand, RowsGroupByClassInTheOrderOfTheirFirstRowAndTheBandSpansTheirExtremes) {
  const std::vector<StepTimeBand> bands = derive_step_time_bands(three_classes());
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].band_class, class_of("A100-80GB", false));
  EXPECT_EQ(bands[0].rows.size(), 3u);
  EXPECT_DOUBLE_EQ(bands[0].lowest(), -0.009);
  EXPECT_DOUBLE_EQ(bands[0].highest(), 0.089);
  EXPECT_EQ(bands[0].gpus(), "A100-80GB");
  EXPECT_EQ(bands[1].band_class, class_of("H100-SXM", false));
  EXPECT_DOUBLE_EQ(bands[1].lowest(), 0.014);
  EXPECT_DOUBLE_EQ(bands[1].highest(), 0.058);
  EXPECT_EQ(bands[1].gpus(), "H100-SXM, H800");
  EXPECT_EQ(bands[2].band_class, class_of("H100-SXM", true));
  EXPECT_EQ(bands[2].rows.size(), 1u);
}

TEST(StepTimeBand, AScenarioGetsItsClassBandAndItsTextSaysSo) {
  const std::vector<StepTimeBand> bands = derive_step_time_bands(three_classes());
  const StepTimeBandVerdict dense = step_time_band_of(load_scenario("nemo-llama3-8b-8xh100"), bands);
  ASSERT_TRUE(dense.band);
  EXPECT_EQ(to_text(dense), "+1.4 % to +5.8 %: published step time against predicted, 2 validation rows of its class "
                            "(H100-SXM, H800, dense)");
  const StepTimeBandVerdict moe = step_time_band_of(load_scenario("qwen3-30b-a3b-16xh100"), bands);
  EXPECT_EQ(to_text(moe), "+222.6 %: published step time against predicted, 1 validation row of its class "
                          "(H100-SXM, mixture of experts)");
}

TEST(StepTimeBand, NoBandWhereNoValidationRowOfTheClassExists) {
  const std::vector<StepTimeBand> bands = derive_step_time_bands(three_classes());
  const StepTimeBandVerdict measured = step_time_band_of(load_scenario("tiny-4gpu", {"cluster.gpu=H200"}), bands);
  EXPECT_FALSE(measured.band);
  EXPECT_EQ(to_text(measured), "none: no validation row of its class (" + to_string(class_of("H200", false)) + ")");
  Scenario spec_sheet = load_scenario("tiny-4gpu");
  spec_sheet.cluster.gpu.compute_provenance = ComputeProvenance::spec_sheet;
  EXPECT_THAT(to_text(step_time_band_of(spec_sheet, bands)),
              HasSubstr("; expect it optimistic: a spec sheet's clocks are not those sustained under load"));
  const StepTimeBandVerdict no_rows = step_time_band_of(load_scenario("nemo-llama3-8b-8xh100"), {});
  EXPECT_FALSE(no_rows.band);
  const nlohmann::ordered_json json = to_json(no_rows);
  EXPECT_EQ(json["rows"], 0);
  EXPECT_TRUE(json["lowest"].is_null());
  EXPECT_TRUE(json["highest"].is_null());
  EXPECT_TRUE(json["row_gpus"].is_null());
  EXPECT_EQ(json["no_band_reason"], "no validation row of its class (" + to_string(class_of("H100-SXM", false)) + ")");
}

TEST(StepTimeBand, TheBandFileReadsBackAsWrittenToTheHundredthOfAPercent) {
  const std::vector<BandRow> rows = {{"r", "A100-80GB", class_of("A100-80GB", false), 0.053649},
                                     {"s", "H100-SXM", class_of("H100-SXM", true), -0.1}};
  const nlohmann::json document = step_time_bands_json(derive_step_time_bands(rows));
  EXPECT_EQ(document["classes"][0]["gpu_figures"], to_string(builtin_gpu("A100-80GB")->compute_provenance));
  EXPECT_EQ(document["classes"][0]["gpu_figures_source"], builtin_gpu("A100-80GB")->compute_source);
  EXPECT_EQ(document["classes"][1]["workload"], "mixture of experts");
  const std::vector<StepTimeBand> read = step_time_bands_from_json(document, "bands.json");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].band_class, class_of("A100-80GB", false));
  EXPECT_EQ(read[0].rows[0].name, "r");
  EXPECT_EQ(read[0].rows[0].gpu, "A100-80GB");
  EXPECT_DOUBLE_EQ(read[0].rows[0].step_time_error, 0.0536);
  EXPECT_EQ(read[1].band_class, class_of("H100-SXM", true));
}

TEST(StepTimeBand, ABadBandFileNamesTheField) {
  nlohmann::json document = step_time_bands_json(derive_step_time_bands(three_classes()));
  document["classes"][1]["workload"] = "sparse";
  EXPECT_EQ(fixtures::input_error_of([&] { step_time_bands_from_json(document, "bands.json"); }),
            "bands.json: classes[1].workload: 'sparse' is not one of: dense, mixture of experts");
  document = step_time_bands_json(derive_step_time_bands(three_classes()));
  document["classes"][0]["rows"][2].erase("step_time_error");
  EXPECT_EQ(fixtures::input_error_of([&] { step_time_bands_from_json(document, "bands.json"); }),
            "bands.json: classes[0].rows[2].step_time_error: missing");
}

}  // namespace
}  // namespace simtrain
