// The failure model of a training run: rates from the components' MTBFs,
// what each failure does to the job, and the draws a run makes from them.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "sim/base/input_error.hpp"
#include "sim/longrun/failure_sources.hpp"
#include "sim/network/fabric.hpp"
#include "test_support.hpp"

using namespace simtrain;

namespace {

// 16 GPUs: two nodes of eight.
Scenario two_nodes(const nlohmann::json& reliability) {
  nlohmann::json doc = fixtures::scenario_json(2, 2, 4, 4, "1f1b");
  doc["reliability"] = reliability;
  return fixtures::scenario_from(doc);
}

int first_redundant_link(const Fabric& fabric) {
  for (size_t i = 0; i < fabric.links().size(); ++i)
    if (fabric.has_redundancy(static_cast<int>(i))) return static_cast<int>(i);
  return -1;
}

}  // namespace

TEST(FailureSources, RandomRatesAreComponentCountsOverTheirMtbf) {
  const ClusterFailures f = cluster_failures(two_nodes({{"gpu_mtbf_hours", 1000}, {"node_mtbf_hours", 2000}}), 16);
  ASSERT_EQ(f.random.size(), 5u);
  EXPECT_EQ(f.random[0].component, Component::gpu);
  EXPECT_DOUBLE_EQ(f.random[0].rate_per_second, 16 / (1000 * 3600.0));
  EXPECT_EQ(f.random[1].component, Component::node);
  EXPECT_DOUBLE_EQ(f.random[1].rate_per_second, 2 / (2000 * 3600.0));
  for (size_t i = 2; i < f.random.size(); ++i) EXPECT_EQ(f.random[i].rate_per_second, 0) << i;  // no MTBF given
  // The job-stopping MTBF is the inverse of the stopping rates' sum.
  EXPECT_DOUBLE_EQ(f.stop_mtbf_seconds, 1 / (f.random[0].rate_per_second + f.random[1].rate_per_second));
  EXPECT_FALSE(f.scheduled_stops);
  EXPECT_FALSE(f.degrading_failure);  // no link can fail
}

TEST(FailureSources, ARedundantLinkDegradesTheStepWhereEverythingElseStopsTheJob) {
  const Scenario probe = two_nodes(nlohmann::json::object());
  const Fabric fabric(probe.cluster.topology, 16);
  const int redundant = first_redundant_link(fabric);
  ASSERT_GE(redundant, 0);
  const std::string name = fabric.links()[redundant].name;
  const ClusterFailures f = cluster_failures(
      two_nodes({{"failures",
                  {{{"component", "link"}, {"link", name}, {"at_hours", 1}},
                   {{"component", "gpu"}, {"index", 3}, {"at_hours", 2}}}}}),
      16);
  ASSERT_EQ(f.scheduled.size(), 2u);
  EXPECT_EQ(f.scheduled[0].first, 3600);
  EXPECT_FALSE(f.scheduled[0].second.stops_job);
  EXPECT_EQ(f.scheduled[1].first, 7200);
  EXPECT_TRUE(f.scheduled[1].second.stops_job);
  EXPECT_TRUE(f.scheduled_stops);
  EXPECT_EQ(f.stop_mtbf_seconds, 0);  // nothing fails at random
  // The degraded step loses one of the link's physical links.
  ASSERT_TRUE(f.degrading_failure);
  const double k = fabric.physical_links(redundant);
  EXPECT_EQ(f.degrading_failure->link, name);
  EXPECT_EQ(f.degrading_failure->rank, -1);
  EXPECT_DOUBLE_EQ(f.degrading_failure->bandwidth_factor, (k - 1) / k);
}

TEST(FailureSources, ScheduledFailuresAfterTheRunAreRefused) {
  const Scenario s = two_nodes({{"failures", {{{"component", "gpu"}, {"index", 0}, {"at_hours", 2}}}}});
  EXPECT_NO_THROW(check_scheduled_before(s, 7200));
  EXPECT_THROW(check_scheduled_before(s, 7199), InputError);
}

TEST(FailureDraws, TheSameSeedDrawsTheSameFailures) {
  const std::vector<FailureSource> sources = {{Component::gpu, 1e-3, true}, {Component::link, 3e-3, false}};
  FailureDraws a(sources, 7), b(sources, 7);
  double at = 0;
  int links = 0;
  for (int i = 0; i < 1000; ++i) {
    const double next = a.next_after(at);
    EXPECT_EQ(next, b.next_after(at));
    EXPECT_GT(next, at);
    const FailureSource& drawn = a.source();
    EXPECT_EQ(&drawn, &b.source());
    links += drawn.component == Component::link;
    at = next;
  }
  // Three quarters of the rate is the link's: 750 of 1000 expected (standard deviation 13.7).
  EXPECT_NEAR(links, 750, 5 * 13.7);
}

TEST(FailureDraws, NothingFailsWithoutARate) {
  const std::vector<FailureSource> sources = {{Component::gpu, 0, true}};
  FailureDraws draws(sources, 1);
  EXPECT_EQ(draws.next_after(10), std::numeric_limits<double>::infinity());
}
