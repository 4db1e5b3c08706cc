// The host thread that launches a rank's kernels: closed forms of its launch
// schedule, and the replay's GPU waiting for it.
#include <gtest/gtest.h>

#include "sim/engine/host_lane.hpp"
#include "sim/engine/replay.hpp"
#include "test_support.hpp"

using namespace simtrain;
using simtrain::fixtures::one_gpu_per_node;

namespace {

// One rank running `works` forwards one after another on its compute stream.
Program forwards_on_one_rank(int works) {
  Program p;
  p.world_size = 1;
  p.coords.resize(1);
  for (int w = 0; w < works; ++w) {
    p.works.push_back(Work{"F s0", {}, 0});
    Task forward;
    forward.kind = TaskKind::F;
    forward.work = w;
    p.add_task(forward);
  }
  p.end_rank();
  return p;
}

Timeline replay_with_host(const Program& p, const std::vector<double>& gpu_seconds, const HostModel& host) {
  ReplayOptions options;
  options.host = host;
  return replay(p, Fabric(one_gpu_per_node(25, 1e-6), p.world_size), gpu_seconds, options);
}

}  // namespace

// N kernels of d launched t apart, t > d: the last launch ends at N t, its kernel d later.
TEST(HostLane, KernelsShorterThanTheirLaunchesEndWithTheLastLaunch) {
  const int n = 100;
  const double launch = 10e-6, run = 4e-6;
  const LaunchedWork w = launch_work(0, 0, n * run, {n, n * launch, 0}, 0);
  EXPECT_NEAR(w.gpu_end, n * launch + run, 1e-12);
  EXPECT_NEAR(w.host_end, n * launch, 1e-12);
}

// Kernels longer than their launches keep the GPU busy from the first launch on.
TEST(HostLane, KernelsLongerThanTheirLaunchesAreGpuBound) {
  const int n = 100;
  const double launch = 5e-6, run = 40e-6;
  const LaunchedWork w = launch_work(0, 0, n * run, {n, n * launch, 0}, 0);
  EXPECT_NEAR(w.gpu_end, launch + n * run, 1e-12);
  // A host already ahead costs nothing: the GPU is the bound.
  const LaunchedWork ahead = launch_work(0, 1.0, n * run, {n, n * launch, 0}, 0);
  EXPECT_NEAR(ahead.gpu_end, 1.0 + n * run, 1e-12);
}

// A synchronisation in the middle: the host waits for the GPU to finish the
// first half, then launches the second half while the GPU idles.
TEST(HostLane, ASyncInTheMiddleMakesTheGpuWaitForTheHostToCatchUp) {
  const int n = 10;
  const double launch = 2e-6, run = 50e-6, sync = 15e-6;
  const LaunchedWork w = launch_work(0, 0, n * run, {n, n * launch, 1}, sync);
  const double first_half = launch + 5 * run;                     // GPU-bound
  const double second_half_first_launch = first_half + sync + launch;  // the GPU idles meanwhile
  EXPECT_NEAR(w.gpu_end, second_half_first_launch + 5 * run, 1e-12);
  EXPECT_NEAR(w.host_end, first_half + sync + 5 * launch, 1e-12);
}

// In the replay: N launches of t on kernels shorter than t take N t (and
// the last kernel); under a CUDA graph (one launch) the same work is GPU-bound.
TEST(HostLane, ReplayedStepIsHostBoundUnlessOneGraphLaunchesTheKernels) {
  const int works = 3, kernels = 200;
  const double launch = 8e-6, run = 3e-6;
  const Program p = forwards_on_one_rank(works);
  const std::vector<double> gpu_seconds(works, kernels * run);
  HostModel eager;
  eager.works.assign(works, HostWork{kernels, kernels * launch, 0});
  const Timeline host_bound = replay_with_host(p, gpu_seconds, eager);
  EXPECT_NEAR(host_bound.step_seconds, works * kernels * launch + run, 1e-9);
  ASSERT_EQ(host_bound.host_wait_seconds.size(), 1u);
  EXPECT_NEAR(host_bound.host_wait_seconds[0], host_bound.step_seconds - works * kernels * run, 1e-9);

  HostModel graph;
  graph.works.assign(works, HostWork{1, 10e-6, 0});
  const Timeline gpu_bound = replay_with_host(p, gpu_seconds, graph);
  EXPECT_NEAR(gpu_bound.step_seconds, 10e-6 + works * kernels * run, 1e-9);

  const Timeline free_host = replay(p, Fabric(one_gpu_per_node(25, 1e-6), 1), gpu_seconds, {});
  EXPECT_NEAR(free_host.step_seconds, works * kernels * run, 1e-12);
  EXPECT_TRUE(free_host.host_wait_seconds.empty());
}

// A work that synchronises holds its host until the GPU is done with the
// kernels before the sync, and the next work's launches come only after:
// host-bound kernels lose the sync's latency and the kernel it waited for.
TEST(HostLane, TheHostGoesOnAfterASyncOnlyWhenTheGpuHasCaughtUp) {
  const Program p = forwards_on_one_rank(2);
  const double run = 10e-6, launch = 50e-6, sync = 20e-6;
  HostModel host;
  host.sync_seconds = sync;
  host.works = {HostWork{2, 2 * launch, 1}, HostWork{2, 2 * launch, 0}};
  const Timeline t = replay_with_host(p, {2 * run, 2 * run}, host);
  const LaunchedWork first = launch_work(0, 0, 2 * run, host.works[0], sync);
  const LaunchedWork second = launch_work(first.host_end, first.gpu_end, 2 * run, host.works[1], sync);
  EXPECT_NEAR(t.tasks[0].end, first.gpu_end, 1e-9);
  EXPECT_NEAR(t.tasks[1].end, second.gpu_end, 1e-9);
  EXPECT_NEAR(second.gpu_end, 4 * launch + sync + run + run, 1e-12);

  host.works[0].syncs = 0;
  const Timeline without_sync = replay_with_host(p, {2 * run, 2 * run}, host);
  EXPECT_NEAR(t.step_seconds - without_sync.step_seconds, sync + run, 1e-9);
}

// The host launches a rank's tasks in program order whatever their stream: a
// transfer issued after a synchronising work starts only once that work has
// returned its host, though nothing else holds it.
TEST(HostLane, ALaunchOnAnotherStreamWaitsForTheSyncBeforeIt) {
  Program p;
  p.world_size = 2;
  p.pipeline_size = 2;
  p.coords = {{0, 0, 0}, {0, 0, 1}};
  p.works.push_back(Work{"F s0", {}, 0});
  Task forward;
  forward.work = 0;
  const int f = p.add_task(forward);
  Task send;
  send.kind = TaskKind::SEND;
  send.stream = Stream::p2p;
  send.peer = 1;
  send.bytes = 1e6;
  const int sent = p.add_task(send);
  p.end_rank();
  Task receive = send;
  receive.kind = TaskKind::RECV;
  receive.rank = 1;
  receive.peer = 0;
  p.add_task(receive, std::vector<int32_t>{sent});
  p.end_rank();

  const double run = 300e-6, launch = 5e-6, sync = 20e-6;
  HostModel host;
  host.sync_seconds = sync;
  host.works = {HostWork{3, 3 * launch, 1}};
  const Timeline t = replay_with_host(p, {3 * run}, host);
  const LaunchedWork first = launch_work(0, 0, 3 * run, host.works[0], sync);
  EXPECT_NEAR(t.tasks[f].end, first.gpu_end, 1e-9);
  EXPECT_NEAR(t.tasks[sent].start, first.host_end, 1e-9);
  EXPECT_GT(first.host_end, 3 * launch);  // the sync held the host
}
