// The failure rates `train` takes where a scenario states none: Llama 3's
// published interruptions as MTBFs per component, and the spare pool.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "sim/longrun/published_failure_rates.hpp"

namespace simtrain {
namespace {

using testing::HasSubstr;

TEST(PublishedFailureRates, Llama3TableFiveHoldsItsFourHundredNineteenInterruptions) {
  int total = 0, gpu = 0, node = 0, link = 0;
  for (const InterruptionCause& c : llama3_interruptions()) {
    total += c.interruptions;
    gpu += c.component == Component::gpu ? c.interruptions : 0;
    node += c.component == Component::node ? c.interruptions : 0;
    link += c.component == Component::link ? c.interruptions : 0;
  }
  EXPECT_EQ(total, 419);  // "419 unexpected interruptions" in the 54-day snapshot
  EXPECT_EQ(gpu + node + link, total);
  EXPECT_EQ(gpu, 148 + 72 + 19 + 17 + 6 + 6);  // faulty GPU, HBM3, SRAM, system processor, SDC, thermal
}

TEST(PublishedFailureRates, MtbfsAreTheSnapshotsComponentHoursPerInterruption) {
  const double cables = 1000;
  const PublishedRates p = published_failure_rates(ReliabilityConfig{}, false, 1024, 8, cables);
  const ReliabilityConfig& r = p.reliability;
  EXPECT_DOUBLE_EQ(r.gpu_mtbf_hours, 16384.0 * 54 * 24 / 268);
  EXPECT_DOUBLE_EQ(r.node_mtbf_hours, 2048.0 * 54 * 24 / 109);
  EXPECT_DOUBLE_EQ(r.link_mtbf_hours, cables * 54 * 24 / 42);
  EXPECT_EQ(r.switch_mtbf_hours, 0);  // switches are counted with the cables
  // On Llama 3's own cluster the rates give back the snapshot's 419 interruptions.
  const double expected = llama3_snapshot_hours * (llama3_gpus / r.gpu_mtbf_hours +
                                                   llama3_gpus / llama3_gpus_per_node / r.node_mtbf_hours +
                                                   cables / r.link_mtbf_hours);
  EXPECT_NEAR(expected, 419, 1e-9);
  EXPECT_THAT(p.description, HasSubstr("Llama 3 405B's, measured on 16,384 H100"));
}

TEST(PublishedFailureRates, CountsTheLinksOfLlama3sFabric) {
  const double cables = llama3_physical_links();
  // At least one NIC cable per GPU, and switch uplinks beyond them.
  EXPECT_GT(cables, llama3_gpus);
  EXPECT_EQ(cables, std::floor(cables));
}

TEST(PublishedFailureRates, SparesCoverTheFailuresInRepairAtOnce) {
  // P(Poisson(1) <= k): 0.368, 0.736, 0.920, 0.981, 0.9963, 0.99941.
  EXPECT_EQ(poisson_quantile(1, 0.999), 5);
  EXPECT_EQ(poisson_quantile(1, 0.99), 4);
  EXPECT_EQ(poisson_quantile(0, 0.999), 0);
  ReliabilityConfig stated;
  stated.spare_nodes = 3;
  EXPECT_EQ(published_failure_rates(stated, true, 16384, 8, 1e5).reliability.spare_nodes, 3);  // as stated
  const ReliabilityConfig r = published_failure_rates(stated, false, 16384, 8, 1e5).reliability;
  const double in_repair = (16384 / r.gpu_mtbf_hours + 2048 / r.node_mtbf_hours) * r.repair_hours;
  // One for the failed node, one for each other node in repair when it fails.
  EXPECT_EQ(r.spare_nodes, 1 + poisson_quantile(in_repair, spare_pool_confidence));
  EXPECT_GT(r.spare_nodes, 1);
  // Four GPUs almost never have a node in repair when one fails: one spare.
  EXPECT_EQ(published_failure_rates(stated, false, 4, 8, 1e5).reliability.spare_nodes, 1);
}

}  // namespace
}  // namespace simtrain
