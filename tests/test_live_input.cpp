// What a live run makes of its input before and after the step, without
// mpirun: the step's estimate and the watchdog's timeout scaled from it
// (live/step_estimate.hpp), the cut-down kernel calls the host backend times
// (live/cpu_kernel.hpp), and the messages of many ranks said once
// (live/process_world.hpp, live/live_run.hpp).
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cpu_kernel.hpp"
#include "live_run.hpp"
#include "process_world.hpp"
#include "sim/program/program_builder.hpp"
#include "step_estimate.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using ::testing::HasSubstr;

// Two ranks, a pipeline of two stages: rank 0 runs work 0 and sends, rank 1
// receives and runs work 1, then both run work 2.
Program two_stage_program() {
  Program p;
  p.world_size = 2;
  p.pipeline_size = 2;
  p.coords = {{0, 0, 0}, {0, 0, 1}};
  p.works.resize(3);
  auto add = [&](int rank, TaskKind kind, int work, std::vector<int> deps) {
    Task t;
    t.rank = rank;
    t.kind = kind;
    t.stream = kind == TaskKind::SEND || kind == TaskKind::RECV ? Stream::p2p : Stream::compute;
    t.work = work;
    return p.add_task(t, deps);
  };
  const int f0 = add(0, TaskKind::F, 0, {});
  const int send = add(0, TaskKind::SEND, -1, {f0});
  const int recv = add(1, TaskKind::RECV, -1, {send});
  add(1, TaskKind::F, 1, {recv});
  add(0, TaskKind::OPT, 2, {});
  add(1, TaskKind::OPT, 2, {});
  p.set_rank_tasks({{0, 1, 4}, {2, 3, 5}});
  return p;
}

TEST(StepEstimate, IsTheCriticalPathWithEachWorkAtTheLongestARankEstimated) {
  const Program p = two_stage_program();
  // Work 0 (2 s), free transfer, work 1 (3 s), then work 2 after it on rank 1.
  EXPECT_EQ(estimated_step_seconds(p, {{2, 0, 0.5}, {0, 3, 0.25}}), 2 + 3 + 0.5);
  // A rank that estimates a work longer than its runner did sets its time.
  EXPECT_EQ(estimated_step_seconds(p, {{2, 0, 0.5}, {4, 3, 0.25}}), 4 + 3 + 0.5);
  EXPECT_EQ(estimated_step_seconds(p, {{}, {}}), 0);
}

TEST(StepEstimate, DefaultTimeoutIsThreeStepsAndAtLeastFiveMinutes) {
  EXPECT_EQ(default_timeout_seconds(0), 300);
  EXPECT_EQ(default_timeout_seconds(100), 300);
  EXPECT_EQ(default_timeout_seconds(27 * 60), 3 * 27 * 60);
  EXPECT_EQ(default_timeout_rule(), "3 x the estimated step, at least 5.0 min");
}

TEST(StepEstimate, DurationsReadAsPeopleSayThem) {
  EXPECT_EQ(duration_text(0.45), "450 ms");
  EXPECT_EQ(duration_text(12.34), "12.3 s");
  EXPECT_EQ(duration_text(552), "9.2 min");
  EXPECT_EQ(duration_text(11160), "3.1 h");
}

TEST(KernelSample, CutsLeadingSizesAndScalesByTheLoopsOfTheWholeCall) {
  // The larger of M and N halved until M*N*K <= 2^26: 64 * 72 * 12288, a block BLAS runs at speed.
  const KernelSample gemm = kernel_sample({Kernel::gemm, Dtype::bf16, {2048, 4608, 12288}});
  EXPECT_EQ(gemm.call.sizes, (std::vector<int64_t>{64, 72, 12288}));
  EXPECT_EQ(gemm.scale, 2048.0 * 4608 / (64 * 72));
  // Batch and heads to 1, then the sequence, whose causal loops run S(S+1)/2 times (2^26 at most).
  const KernelSample attention = kernel_sample({Kernel::attention_forward, Dtype::bf16, {2, 16, 4096, 128}});
  EXPECT_EQ(attention.call.sizes, (std::vector<int64_t>{1, 1, 512, 128}));
  EXPECT_EQ(attention.scale, 2.0 * 16 * (4096.0 * 4097 / 2) / (512.0 * 513 / 2));
  // The table's rows hold memory, not loops: cut for the 16 MiB, not counted in the scale.
  const KernelSample embedding = kernel_sample({Kernel::embedding_forward, Dtype::bf16, {1024, 1024, 16000, 2}});
  EXPECT_EQ(embedding.call.sizes, (std::vector<int64_t>{1, 1024, 4000, 2}));
  EXPECT_EQ(embedding.scale, 1024);
  // A call small enough is its own sample.
  const KernelCall norm{Kernel::layernorm_forward, Dtype::bf16, {1024, 1024}};
  EXPECT_EQ(kernel_sample(norm).call.sizes, norm.sizes);
  EXPECT_EQ(kernel_sample(norm).scale, 1);
  EXPECT_GT(CpuKernel::estimated_seconds(norm), 0);
  EXPECT_THROW(kernel_sample({Kernel::gemm, Dtype::bf16, {4, 4}}), std::invalid_argument);
}

TEST(KernelSample, EveryCallOfAScenarioHasASmallSample) {
  const Scenario s = load_scenario("tiny-4gpu");
  const Program program = build_program(s, build_workload(s));
  for (int rank = 0; rank < program.world_size; ++rank)
    for (const auto& [name, call] : rank_kernel_calls(program, rank, s.training.dtype, kernel_context(s))) {
      const KernelSample sample = kernel_sample(call);
      EXPECT_LE(CpuKernel::bytes_needed(sample.call), 16 << 20) << name;
      EXPECT_GE(sample.scale, 1) << name;
      EXPECT_EQ(sample.call.kernel, call.kernel) << name;
    }
}

TEST(ManyRanks, EachDistinctMessageIsSaidOnceAfterItsRanks) {
  EXPECT_EQ(grouped_by_rank({{0, "X"}, {1, "X"}, {2, ""}, {3, "Y"}}, 4), "ranks 0, 1: X; rank 3: Y");
  EXPECT_EQ(grouped_by_rank({{0, "Y"}, {1, "X"}, {2, "Y"}}, 4), "ranks 0, 2: Y; rank 1: X");
  EXPECT_EQ(grouped_by_rank({{0, "X"}, {1, "X"}}, 2, "\n"), "every rank: X");
  EXPECT_EQ(grouped_by_rank({{0, "X"}}, 1), "rank 0: X");
  EXPECT_EQ(grouped_by_rank({{0, ""}, {1, ""}}, 2), "");
}

TEST(ManyRanks, AStoppedRunIsReportedOnceForAll) {
  const StopReport failed = stop_report(
      {{0, "compute queue at 'F'"}, {1, "failed: task 7 failed"}, {3, "failed: rank 3: wrong all-reduce result"}}, 4, 300);
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.text, "simtrain live: rank 1: task 7 failed\nsimtrain live: rank 3: wrong all-reduce result\n");
  const StopReport stalled = stop_report({{0, "compute queue at 'F'"}, {2, "p2p queue at 'recv'"}}, 3, 2);
  EXPECT_EQ(stalled.exit_code, 3);
  EXPECT_EQ(stalled.text,
            "simtrain live: no task completed for 2 s; rank 1 did not answer (dead or hung)\n"
            "  rank 0: compute queue at 'F'\n  rank 2: p2p queue at 'recv'\n");
}

TEST(ManyRanks, TheLaunchersRankIsReadFromItsEnvironment) {
  const char* variable = "SIMTRAIN_TEST_LAUNCHER_RANK";
  EXPECT_EQ(rank_from_environment({variable}), 0);
  for (const auto& [value, rank] : std::vector<std::pair<std::string, int>>{{"3", 3}, {"x", 0}, {"-1", 0}, {"2x", 0}}) {
    ::setenv(variable, value.c_str(), 1);
    EXPECT_EQ(rank_from_environment({"SIMTRAIN_TEST_UNSET_RANK", variable}), rank) << value;
  }
  ::unsetenv(variable);
}

TEST(LiveCli, NonPositiveSizesAndTimeoutAreRefusedNamingTheFlag) {
  for (const char* flag : {"--layers", "--micro-batches", "--timeout"}) {
    const fixtures::CliResult r = fixtures::run_simtrain({"live", "tiny-4gpu", flag, "0"});
    EXPECT_EQ(r.code, 2) << flag;
    EXPECT_EQ(r.err, "simtrain: " + std::string(flag) + ": must be more than 0, got 0\n");
  }
}

}  // namespace
}  // namespace simtrain
