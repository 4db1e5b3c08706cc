// The report's sensitivity line: the step replayed with every compute task
// 10 % longer and with every link at half its bandwidth.
#include <gtest/gtest.h>

#include "sim/engine/simulate.hpp"
#include "test_support.hpp"

using namespace simtrain;

TEST(Sensitivity, OneGpuHingesOnComputeAlone) {
  // One GPU: nothing crosses a link, every task is compute (or the optimizer).
  // With launches free the step is its compute; the host launching them
  // takes part of it (this small model's kernels are short), which a slower
  // GPU does not stretch.
  const Scenario s = fixtures::scenario_from(fixtures::scenario_json(1, 1, 1, 4, "1f1b"));
  ReplayOptions free_launches;
  free_launches.free_launches = true;
  const StepReport r = simulate(s, free_launches, SensitivityReplays::always).report;
  ASSERT_TRUE(r.sensitivity && r.sensitivity->computed);
  EXPECT_NEAR(r.sensitivity->compute_slower_seconds, r.step_seconds * kSensitivityComputeFactor, 1e-12 * r.step_seconds);
  EXPECT_DOUBLE_EQ(r.sensitivity->network_slower_seconds, r.step_seconds);
  const StepReport launched = simulate(s, {}, SensitivityReplays::always).report;
  EXPECT_GT(launched.step_seconds, r.step_seconds);
  EXPECT_GT(launched.sensitivity->compute_slower_seconds, launched.step_seconds);
  EXPECT_LT(launched.sensitivity->compute_slower_seconds, launched.step_seconds * kSensitivityComputeFactor);
  EXPECT_DOUBLE_EQ(launched.sensitivity->network_slower_seconds, launched.step_seconds);
}

TEST(Sensitivity, ExposedCommunicationMakesTheNetworkCount) {
  const StepReport r = simulate(load_scenario("tiny-4gpu"), {}, SensitivityReplays::always).report;
  ASSERT_TRUE(r.sensitivity && r.sensitivity->computed);
  EXPECT_GT(r.sensitivity->compute_slower_seconds, r.step_seconds);
  EXPECT_LT(r.sensitivity->compute_slower_seconds, r.step_seconds * kSensitivityComputeFactor);  // TP comm does not scale
  EXPECT_GT(r.sensitivity->network_slower_seconds, r.step_seconds);
  EXPECT_NE(to_text(r).find("sensitivity           compute 10 % slower "), std::string::npos);
}

TEST(Sensitivity, OnlyWhenAskedFor) {
  const Scenario s = load_scenario("tiny-4gpu");
  EXPECT_FALSE(simulate(s).report.sensitivity);
  const StepReport automatic = simulate(s, {}, SensitivityReplays::automatic).report;
  ASSERT_TRUE(automatic.sensitivity);
  EXPECT_TRUE(automatic.sensitivity->computed);  // far below kSensitivityTaskLimit
  EXPECT_EQ(to_json(automatic)["sensitivity"]["computed"], true);
}

TEST(Sensitivity, ForcingAndSkippingItAtOnceIsRefused) {
  const fixtures::CliResult r =
      fixtures::run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--sensitivity", "--no-sensitivity"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sensitivity excludes --no-sensitivity"), std::string::npos) << r.err;
}
