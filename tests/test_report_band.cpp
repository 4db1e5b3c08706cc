// The report's error band and GPU provenance: the text lines under the step
// time and the JSON fields say the same thing; a recorded trace's report
// gives neither (null in JSON).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/base/text_format.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/step/report.hpp"

namespace simtrain {
namespace {

using testing::HasSubstr;
using testing::Not;

TEST(ReportBand, TextGivesTheBandAndTheGpuFiguresUnderTheStepTime) {
  const Scenario scenario = load_scenario("tiny-4gpu");  // H100-SXM, dense
  const GpuSpec& h100 = scenario.cluster.gpu;
  StepReport r = simulate(scenario).report;
  r.step_time_band = step_time_band_of(scenario, derive_step_time_bands({{"one", "H100-SXM", band_class(scenario), -0.02},
                                                                         {"two", "H100-SXM", band_class(scenario), 0.061}}));
  EXPECT_THAT(to_text(r), HasSubstr(format("\nstep time             %.4f s\n", r.step_seconds) +
                                    "error band            -2.0 % to +6.1 %: published step time against predicted, 2 "
                                    "validation rows of its class (H100-SXM, dense)\n"
                                    "GPU figures           H100-SXM: " + to_string(h100.compute_provenance) + " (" +
                                    h100.compute_source + "), docs/gpus.md\n"));
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(j["step_time_band"]["class"]["gpu_figures"], to_string(h100.compute_provenance));
  EXPECT_EQ(j["step_time_band"]["class"]["gpu_figures_source"], h100.compute_source);
  EXPECT_EQ(j["step_time_band"]["class"]["workload"], "dense");
  EXPECT_EQ(j["step_time_band"]["rows"], 2);
  EXPECT_DOUBLE_EQ(j["step_time_band"]["lowest"].get<double>(), -0.02);
  EXPECT_DOUBLE_EQ(j["step_time_band"]["highest"].get<double>(), 0.061);
  EXPECT_EQ(j["step_time_band"]["row_gpus"], "H100-SXM");
  EXPECT_TRUE(j["step_time_band"]["no_band_reason"].is_null());
  EXPECT_EQ(j["gpu_figures"]["gpu"], "H100-SXM");
  EXPECT_EQ(j["gpu_figures"]["provenance"], to_string(h100.compute_provenance));
  EXPECT_EQ(j["gpu_figures"]["source"], h100.compute_source);
}

TEST(ReportBand, WithoutARowOfItsClassTheReportSaysWhyAndGivesNoFigure) {
  const Scenario scenario = load_scenario("tiny-4gpu", {"cluster.gpu=H200"});
  StepReport r = simulate(scenario).report;
  r.step_time_band = step_time_band_of(scenario, {});
  EXPECT_THAT(to_text(r), HasSubstr("\nerror band            none: no validation row of its class (GPU figures measured (" +
                                    scenario.cluster.gpu.compute_source + "), dense)\n"));
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(j["step_time_band"]["rows"], 0);
  EXPECT_TRUE(j["step_time_band"]["lowest"].is_null());
  EXPECT_TRUE(j["step_time_band"]["highest"].is_null());
  EXPECT_THAT(j["step_time_band"]["no_band_reason"].get<std::string>(), HasSubstr("no validation row of its class"));
  EXPECT_EQ(j["gpu_figures"]["provenance"], "measured");
}

TEST(ReportBand, ARecordedTraceGivesNeitherBandNorGpuFigures) {
  const Simulation sim = simulate(load_scenario("tiny-4gpu"));
  const StepReport trace = timing_report(sim.program, sim.timeline);
  EXPECT_THAT(to_text(trace), Not(HasSubstr("error band")));
  EXPECT_THAT(to_text(trace), Not(HasSubstr("GPU figures")));
  const nlohmann::ordered_json j = to_json(trace);
  EXPECT_TRUE(j["step_time_band"].is_null());
  EXPECT_TRUE(j["gpu_figures"].is_null());
}

}  // namespace
}  // namespace simtrain
