// The communication backend of the data-parallel gradient reductions: Gloo's
// all-reduce through the hosts against its closed form, in the plan and in
// the replay, and the backends a cluster of several GPU vendors may use.
#include <gtest/gtest.h>

#include "sim/base/input_error.hpp"
#include "sim/engine/replay.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/network/collective_plan.hpp"
#include "test_support.hpp"

using namespace simtrain;
using simtrain::fixtures::one_gpu_per_node;

namespace {

// Gloo's ring over n ranks, written out from the sources of gloo_host_path.hpp:
// 2(n-1)/n of the bucket over one TCP connection (25 Gbit/s, ESnet's
// single-stream middle) or the NIC, whichever is slower; the copy to pinned
// host memory and back over PCIe Gen5 x16 (63.0 GB/s a direction); the CPU's
// sums, 3 bytes of DDR5 traffic (307.2 GB/s) per byte of its (n-1)/n; and
// 2(n-1) steps of the route's latency.
double gloo_seconds(int n, double bytes, double nic_bytes_per_second, double step_latency_seconds) {
  const double tcp = 25e9 / 8, pcie = 32e9 * 16 / 8 * 128 / 130, memory = 8 * 4800e6 * 8;
  return 2.0 * (n - 1) / n * bytes / std::min(nic_bytes_per_second, tcp) + 2 * bytes / pcie +
         3 * bytes * (n - 1) / n / memory + 2 * (n - 1) * step_latency_seconds;
}

std::string field_refused(const nlohmann::json& document) {
  try {
    fixtures::scenario_from(document);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "test.json");
    return e.field();
  }
  return "(accepted)";
}

}  // namespace

TEST(GlooBackend, RingThroughTheHostsIsItsClosedForm) {
  const double hop = 2e-6, bytes = 1e9;
  const std::vector<int> ranks = {0, 1, 2, 3};
  // A 50 GB/s NIC: one TCP connection (3.125 GB/s) bounds each ring step.
  const Fabric fast(one_gpu_per_node(50, hop), 4);
  const CollectivePlan plan = plan_collective(TaskKind::ALLREDUCE, ranks, bytes, 1, Algorithm::gloo_ring, fast);
  ASSERT_EQ(plan.flows.size(), 4u);  // one ring, one connection per rank
  EXPECT_DOUBLE_EQ(closed_form_seconds(plan, fast), gloo_seconds(4, bytes, 50e9, 2 * hop));
  // A 1 GB/s NIC binds instead.
  const Fabric slow(one_gpu_per_node(1, hop), 4);
  EXPECT_DOUBLE_EQ(closed_form_seconds(plan_collective(TaskKind::ALLREDUCE, ranks, bytes, 1, Algorithm::gloo_ring, slow),
                                       slow),
                   gloo_seconds(4, bytes, 1e9, 2 * hop));
}

TEST(GlooBackend, TheReplayBoundsEachConnectionAndAddsTheHostsWork) {
  const double hop = 2e-6, bytes = 256e6;
  Program p = fixtures::lone_collective(4, TaskKind::ALLREDUCE, bytes, CommDim::dp);
  p.groups[0].allreduce_algorithm = Algorithm::gloo_ring;
  const Fabric fabric(one_gpu_per_node(50, hop), 4);
  ReplayOptions options;
  const Timeline t = replay(p, fabric, {}, options);
  EXPECT_NEAR(t.tasks[0].end / gloo_seconds(4, bytes, 50e9, 2 * hop), 1.0, 1e-6);
}

TEST(GlooBackend, SlowsADataParallelStepThatNcclRunsFaster) {
  nlohmann::json doc = fixtures::scenario_json(1, 1, 8, 2, "1f1b");
  const Simulation nccl = simulate(fixtures::scenario_from(doc));
  doc["cluster"]["communication_backend"] = "gloo";
  const Simulation gloo = simulate(fixtures::scenario_from(doc));
  EXPECT_GT(gloo.timeline.step_seconds, nccl.timeline.step_seconds);
}

TEST(GlooBackend, NcclDoesNotSpanVendors) {
  nlohmann::json doc = fixtures::scenario_json(2, 1, 4, 2, "1f1b");
  doc["cluster"]["gpu_vendors"] = {{"4-7", "AMD"}};  // data-parallel replicas 2 and 3
  EXPECT_EQ(field_refused(doc), "cluster.communication_backend");  // nccl, the default
  doc["cluster"]["communication_backend"] = "nccl";
  EXPECT_EQ(field_refused(doc), "cluster.communication_backend");
  doc["cluster"]["communication_backend"] = "gloo";
  EXPECT_EQ(fixtures::scenario_from(doc).cluster.gpu_vendors[5], "AMD");
  // A replica of both vendors: its tensor-parallel all-reduces would cross them.
  doc["cluster"]["gpu_vendors"] = {{"5", "AMD"}};
  EXPECT_EQ(field_refused(doc), "cluster.gpu_vendors");
  doc["cluster"]["gpu_vendors"] = {{"8", "AMD"}};
  EXPECT_EQ(field_refused(doc), "cluster.gpu_vendors.8");
  doc["cluster"]["gpu_vendors"] = {{"4-7", "Intel"}};
  EXPECT_EQ(field_refused(doc), "cluster.gpu_vendors.4-7");
}

TEST(GlooBackend, IsRefusedWhereItsModelDoesNotReach) {
  nlohmann::json doc = fixtures::scenario_json(1, 1, 4, 2, "1f1b");
  doc["cluster"]["communication_backend"] = "gloo";
  doc["parallelism"]["zero_stage"] = 1;
  EXPECT_EQ(field_refused(doc), "parallelism.zero_stage");
  doc["parallelism"].erase("zero_stage");
  doc["parallelism"]["dp_sync"] = "tree";
  EXPECT_EQ(field_refused(doc), "parallelism.dp_sync");
  doc["parallelism"].erase("dp_sync");
  doc["cluster"]["gpu"] = "A100-80GB";  // PCIe Gen4
  doc["cluster"]["topology"] = "dgx-a100-superpod";
  EXPECT_EQ(field_refused(doc), "cluster.communication_backend");
  doc["cluster"]["communication_backend"] = "mpi";
  EXPECT_EQ(field_refused(doc), "cluster.communication_backend");
}
