// Overlap is not free: a collective beside compute takes its CTAs' SMs from
// the compute, which runs on the rest while it lasts.
#include <gtest/gtest.h>

#include "sim/engine/compute_interference.hpp"
#include "sim/engine/replay.hpp"
#include "test_support.hpp"

using namespace simtrain;
using simtrain::fixtures::one_gpu_per_node;
using simtrain::fixtures::ring_seconds;

namespace {

// A ring all-reduce on the dp stream of ranks 0..n-1, beside a forward of
// work 0 on each rank's compute stream, both from the step's start.
Program compute_beside_collective(int n, double bytes) {
  Program p;
  p.world_size = n;
  p.coords.resize(n);
  p.works.push_back(Work{"F s0", {}, 0});
  Group g{0, CommDim::dp, "dp0", {}};
  for (int r = 0; r < n; ++r) g.ranks.push_back(r);
  p.groups.push_back(g);
  for (int r = 0; r < n; ++r) {
    Task forward;
    forward.rank = r;
    forward.kind = TaskKind::F;
    forward.work = 0;
    p.add_task(forward);
    Task reduce;
    reduce.rank = r;
    reduce.stream = Stream::dp;
    reduce.kind = TaskKind::ALLREDUCE;
    reduce.dim = CommDim::dp;
    reduce.group = 0;
    reduce.bytes = bytes;
    p.add_task(reduce);
    p.end_rank();
  }
  return p;
}

Task collective(TaskKind kind, Stream stream, CommDim dim) {
  Task t;
  t.kind = kind;
  t.stream = stream;
  t.dim = dim;
  return t;
}

}  // namespace

// While a collective of share f runs for C seconds, compute of T > C seconds
// gets 1 - f of the GPU: it ends at C + (T - C (1 - f)) = T + f C.
TEST(ComputeInterference, ComputeBesideACollectiveEndsLaterByTheShareTimesItsDuration) {
  const int n = 4;
  const double bytes = 64e6, bandwidth = 25e9, hop_latency = 2e-6, compute_seconds = 0.05;
  const double collective_seconds = ring_seconds(TaskKind::ALLREDUCE, n, bytes, bandwidth, 2 * hop_latency);
  ASSERT_LT(collective_seconds, compute_seconds);
  const Program p = compute_beside_collective(n, bytes);
  const Fabric fabric(one_gpu_per_node(25, hop_latency), n);
  ReplayOptions options;
  options.allreduce_algorithm = Algorithm::ring;
  const Timeline free_overlap = replay(p, fabric, {compute_seconds}, options);
  EXPECT_NEAR(free_overlap.tasks[0].end, compute_seconds, 1e-9);

  options.interference.nccl_sm_share = 0.2;
  const Timeline slowed = replay(p, fabric, {compute_seconds}, options);
  const double collective_end = slowed.tasks[1].end;
  EXPECT_NEAR(collective_end / collective_seconds, 1.0, 0.01);
  EXPECT_NEAR(slowed.tasks[0].end, compute_seconds + 0.2 * collective_end, 1e-9);
  for (int rank = 0; rank < n; ++rank) EXPECT_NEAR(slowed.tasks[2 * rank].end, slowed.tasks[0].end, 1e-12);
}

// Compute shorter than the collective runs at 1 - f throughout: T / (1 - f).
TEST(ComputeInterference, ComputeShorterThanTheCollectiveRunsAtTheShareLeft) {
  const int n = 2;
  const Program p = compute_beside_collective(n, 256e6);
  const Fabric fabric(one_gpu_per_node(25, 2e-6), n);
  ReplayOptions options;
  options.allreduce_algorithm = Algorithm::ring;
  options.interference.nccl_sm_share = 0.25;
  const double compute_seconds = 1e-3;
  const Timeline t = replay(p, fabric, {compute_seconds}, options);
  ASSERT_GT(t.tasks[1].end, compute_seconds / 0.75);
  EXPECT_NEAR(t.tasks[0].end, compute_seconds / 0.75, 1e-9);
}

TEST(ComputeInterference, OnlyCollectivesBesideComputeTakeSms) {
  ComputeInterference i{.nccl_sm_share = 0.18,
                        .userbuffers_all_gather_sm_share = 0.01,
                        .userbuffers_reduce_scatter_sm_share = 0.12,
                        .tp_in_userbuffers = true};
  EXPECT_EQ(i.sm_share(collective(TaskKind::ALLREDUCE, Stream::compute, CommDim::tp)), 0);  // blocks the compute
  EXPECT_EQ(i.sm_share(collective(TaskKind::SEND, Stream::p2p, CommDim::pp)), 0);
  EXPECT_EQ(i.sm_share(collective(TaskKind::ALLREDUCE, Stream::dp, CommDim::dp)), 0.18);
  EXPECT_EQ(i.sm_share(collective(TaskKind::ALLGATHER, Stream::dp_gather, CommDim::dp)), 0.18);
  EXPECT_EQ(i.sm_share(collective(TaskKind::ALLTOALL, Stream::tp_overlap, CommDim::ep)), 0.18);
  EXPECT_EQ(i.sm_share(collective(TaskKind::REDUCESCATTER, Stream::tp_overlap, CommDim::tp)), 0.12);
  EXPECT_EQ(i.sm_share(collective(TaskKind::ALLGATHER, Stream::tp_overlap, CommDim::tp)), 0.01);
  i.tp_in_userbuffers = false;  // sequence parallelism's overlapped collectives through NCCL
  EXPECT_EQ(i.sm_share(collective(TaskKind::REDUCESCATTER, Stream::tp_overlap, CommDim::tp)), 0.18);
}

// NCCL's 24 CTAs and Transformer Engine's userbuffers SMs (16 for its
// reduce-scatters, 1 beside the copy engines for its all-gathers) over the GPU's SMs.
TEST(ComputeInterference, SharesAreTheCtasOverTheGpusSms) {
  nlohmann::json doc = fixtures::scenario_json(8, 1, 1, 8, "1f1b");
  doc["cluster"]["gpu"] = "H100-SXM";
  doc["parallelism"]["sequence_parallel"] = true;
  doc["parallelism"]["tp_comm_overlap"] = true;
  const ComputeInterference h100 = compute_interference(fixtures::scenario_from(doc));
  EXPECT_DOUBLE_EQ(h100.nccl_sm_share, 24.0 / 132);
  EXPECT_DOUBLE_EQ(h100.userbuffers_reduce_scatter_sm_share, 16.0 / 132);
  EXPECT_DOUBLE_EQ(h100.userbuffers_all_gather_sm_share, 1.0 / 132);
  EXPECT_TRUE(h100.tp_in_userbuffers);
  doc["cluster"]["gpu"] = "A100-80GB";
  doc["parallelism"]["tp_comm_overlap"] = false;
  const ComputeInterference a100 = compute_interference(fixtures::scenario_from(doc));
  EXPECT_DOUBLE_EQ(a100.nccl_sm_share, 24.0 / 108);
  EXPECT_FALSE(a100.tp_in_userbuffers);
}
