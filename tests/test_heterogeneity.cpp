// Slow GPUs, degraded and failing links, failing GPUs: the step replay under
// a cluster that is not uniform.
#include <gtest/gtest.h>

#include "sim/base/input_error.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/program/critical_path.hpp"
#include "sim/program/program_builder.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// Each task's duration as the replay runs it with free communication:
// compute scaled by its GPU's speed, communication free.
std::vector<double> task_seconds(const Program& p, const std::vector<double>& work_seconds,
                                 const std::vector<double>& speed) {
  std::vector<double> seconds;
  for (const Task& t : p.tasks) seconds.push_back(t.work >= 0 ? work_seconds[t.work] / speed[t.rank] : 0.0);
  return seconds;
}

Scenario pipeline(int p, int m) {
  nlohmann::json doc = fixtures::scenario_json(1, p, 1, 2 * p, "1f1b", 0, m);
  doc["model"]["tie_word_embeddings"] = false;
  return fixtures::scenario_from(doc);
}

// TP 8 x DP 4 over four nodes, two per leaf, leaves 2:1 oversubscribed: the
// eight DP rings fill the eight uplinks' worth of a leaf's uplink bundle.
Scenario across_units() {
  nlohmann::json doc = fixtures::scenario_json(8, 1, 4, 4, "1f1b", 0, 2);
  doc["model"]["hidden_size"] = 2048;
  doc["cluster"]["topology"] = {{"gpus_per_node", 8},    {"nvlink_GBps", 450},       {"nics_per_node", 8},
                                {"nic_Gbps", 400},      {"rail_optimized", false},  {"nodes_per_unit", 2},
                                {"units_per_pod", 2},   {"leaf_oversubscription", 2}};
  return fixtures::scenario_from(doc);
}

}  // namespace

TEST(Heterogeneity, ASlowGpuLengthensTheStepByWhatTheCriticalPathLoses) {
  const Scenario s = pipeline(4, 8);
  const Workload w = build_workload(s);
  const Program program = build_program(s, w);
  const std::vector<double> work_seconds = work_durations(program, RooflineModel(s.cluster.gpu), s.training.dtype);
  const Fabric fabric(s.cluster.topology, 4);
  ReplayOptions options;
  options.free_communication = true;
  const double nominal = replay(program, fabric, work_seconds, options).step_seconds;
  options.gpu_speed_factors = {1.0, 0.5, 1.0, 1.0};
  const double slowed = replay(program, fabric, work_seconds, options).step_seconds;

  const double predicted = critical_path(program, task_seconds(program, work_seconds, options.gpu_speed_factors)).seconds;
  const double predicted_nominal = critical_path(program, task_seconds(program, work_seconds, {1, 1, 1, 1})).seconds;
  EXPECT_NEAR(nominal / predicted_nominal, 1.0, 1e-9);
  EXPECT_NEAR(slowed / predicted, 1.0, 1e-9);
  EXPECT_GT(slowed, nominal * 1.3);  // stage 1 becomes the bottleneck of every micro-batch
}

TEST(Heterogeneity, StragglersAreDrawnFromTheSeed) {
  nlohmann::json doc = fixtures::scenario_json(1, 1, 64, 2, "1f1b");
  doc["cluster"]["stragglers"] = {{"fraction", 0.25}, {"speed_factor", 0.5}, {"seed", 7}};
  const Scenario a = fixtures::scenario_from(doc), b = fixtures::scenario_from(doc);
  EXPECT_EQ(a.cluster.heterogeneity.gpu_speed_factors, b.cluster.heterogeneity.gpu_speed_factors);
  EXPECT_EQ(std::count(a.cluster.heterogeneity.gpu_speed_factors.begin(), a.cluster.heterogeneity.gpu_speed_factors.end(), 0.5), 16);
  doc["cluster"]["stragglers"]["seed"] = 8;
  EXPECT_NE(fixtures::scenario_from(doc).cluster.heterogeneity.gpu_speed_factors, a.cluster.heterogeneity.gpu_speed_factors);
}

TEST(Heterogeneity, BadFactorsAndUnknownLinksAreRefused) {
  nlohmann::json doc = fixtures::scenario_json(1, 2, 1, 2, "1f1b");
  doc["cluster"]["gpu_speed_factors"] = {{"9", 0.5}};
  EXPECT_THROW(fixtures::scenario_from(doc), InputError);
  doc["cluster"]["gpu_speed_factors"] = {{"1", 1.5}};
  EXPECT_THROW(fixtures::scenario_from(doc), InputError);
  doc["cluster"].erase("gpu_speed_factors");
  doc["cluster"]["link_bandwidth_factors"] = {{"nic99.0_up", 0.5}};
  try {
    simulate(fixtures::scenario_from(doc));
    ADD_FAILURE() << "unknown link accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.link_bandwidth_factors.nic99.0_up"), std::string::npos) << e.what();
  }
}

TEST(Heterogeneity, LosingOneOfEightUplinksSlowsTheStepButItCompletes) {
  const Scenario s = across_units();
  const Simulation nominal = simulate(s);
  ReplayOptions options;
  options.failures.push_back({0.0, -1, "leaf0_up", 7.0 / 8});  // one of its eight physical uplinks fails
  const Simulation degraded = simulate(s, options);
  EXPECT_FALSE(degraded.timeline.stopped);
  EXPECT_GT(degraded.timeline.step_seconds, nominal.timeline.step_seconds);
}

TEST(Heterogeneity, ALinkWithoutRedundancyGoingDownStopsTheJob) {
  const Scenario s = across_units();
  ReplayOptions options;
  options.failures.push_back({0.0, -1, "nic0.0_up", 0.0});
  const Simulation sim = simulate(s, options);
  EXPECT_TRUE(sim.timeline.stopped);
  EXPECT_FALSE(sim.timeline.stop_reason.empty());
  EXPECT_TRUE(sim.report.stopped);
}

TEST(Heterogeneity, AFailingGpuStopsTheJobAtItsTime) {
  const Scenario s = pipeline(2, 4);
  const double nominal = simulate(s).timeline.step_seconds;
  ReplayOptions options;
  options.failures.push_back({nominal / 2, 1, "", 0});
  const Simulation sim = simulate(s, options);
  EXPECT_TRUE(sim.timeline.stopped);
  EXPECT_DOUBLE_EQ(sim.timeline.step_seconds, nominal / 2);
  EXPECT_NE(sim.timeline.stop_reason.find("GPU 1"), std::string::npos);
}
