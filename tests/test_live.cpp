// Live mode with the host backend: `mpirun simtrain live` runs the Program
// of tiny-4gpu (shrunk to CPU-sized layers) for real, and the trace it
// writes is checked against the Program.
#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "communicator_plan.hpp"
#include "sim/base/text_format.hpp"
#include "sim/model/profile_database.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/program/trace.hpp"
#include "sim/program/trace_reader.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using ::testing::HasSubstr;

// tiny-4gpu with layers small enough for a quick CPU run.
const std::vector<std::string> kCpuSized = {"--set", "hidden_size=128",        "--set", "intermediate_size=512",
                                            "--set", "num_attention_heads=4",  "--set", "seq_length=128",
                                            "--set", "vocab_size=1024"};
const std::vector<std::string> kDataParallel = {"--set", "tensor_model_parallel_size=1", "--set",
                                                "pipeline_model_parallel_size=1"};

std::vector<std::string> overrides_of(const std::vector<std::string>& args) {
  std::vector<std::string> overrides;
  for (size_t i = 0; i + 1 < args.size(); i += 2)
    if (args[i] == "--set") overrides.push_back(args[i + 1]);
  return overrides;
}

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

#ifdef SIMTRAIN_MPIEXEC

class LiveRun : public ::testing::Test {
protected:
  void SetUp() override {
    if (const std::string missing = fixtures::mpirun_missing(); !missing.empty()) GTEST_SKIP() << missing;
  }
  std::string path(const std::string& name) const { return (directory_.path() / name).string(); }
  fixtures::CliResult live(int ranks, const std::vector<std::string>& args, int limit_seconds = 600) const {
    return fixtures::run_mpi_simtrain(ranks, joined({"live", "tiny-4gpu"}, args), directory_.path(), limit_seconds);
  }

  fixtures::TemporaryDirectory directory_{"live"};
};

// Every task ran once, each queue in Program order, after its dependencies
// on the same rank, each receive after its send began; every collective's
// result was checked.
void expect_program_executed(const Program& program, const RecordedStep& step, const std::string& report) {
  ASSERT_EQ(step.program.tasks.size(), program.tasks.size());
  long long collectives = 0;
  for (const Task& t : program.tasks) {
    EXPECT_EQ(task_name(step.program, step.program.tasks[t.id]), task_name(program, t));
    EXPECT_EQ(step.program.tasks[t.id].rank, t.rank);
    const TaskTiming& timing = step.timeline.tasks[t.id];
    EXPECT_LE(timing.start, timing.end) << task_name(program, t);
    for (int dep : program.deps(t)) {
      if (program.tasks[dep].rank == t.rank)
        EXPECT_LE(step.timeline.tasks[dep].end, timing.start) << task_name(program, t) << " before its dependency";
      else  // a RECV and its SEND: clocks of two processes, synchronised by a barrier
        EXPECT_LE(step.timeline.tasks[dep].start, timing.end + 1e-3) << task_name(program, t) << " ended before its send began";
    }
    if (is_collective(t.kind)) collectives += t.count;
    if (is_compute(t.kind)) {
      ASSERT_TRUE(step.timeline.live);
      EXPECT_EQ(step.timeline.live->op_seconds[t.id].size(), program.works[t.work].ops.size()) << task_name(program, t);
    }
  }
  for (int rank = 0; rank < program.world_size; ++rank)
    for (const TaskQueue& queue : task_queues(program, rank, true))  // the live runner's queues
      for (size_t i = 1; i < queue.tasks.size(); ++i)
        EXPECT_LE(step.timeline.tasks[queue.tasks[i - 1]].end, step.timeline.tasks[queue.tasks[i]].start)
            << task_name(program, program.tasks[queue.tasks[i]]) << " ran before the task queued ahead of it";
  EXPECT_THAT(report, HasSubstr("collectives checked"));
  EXPECT_THAT(report, HasSubstr(with_commas(double(collectives)) + ", all correct"));
  ASSERT_TRUE(step.timeline.live);
  EXPECT_EQ(step.timeline.live->device, "host CPU (MPI backend)");
}

Program program_of(const std::vector<std::string>& args) {
  const Scenario scenario = load_scenario("tiny-4gpu", overrides_of(args));
  return build_program(scenario, build_workload(scenario));
}

TEST_F(LiveRun, TensorAndPipelineParallelStepRunsTheProgram) {
  const fixtures::CliResult r = live(4, joined(kCpuSized, {"--trace", path("live.json")}));
  ASSERT_EQ(r.code, 0) << r.err;
  expect_program_executed(program_of(kCpuSized), read_chrome_trace_file(path("live.json")), r.out);
  EXPECT_THAT(r.out, HasSubstr("scaled down           no"));
  // Estimated before launching: a CPU-sized step takes seconds, so the watchdog keeps its floor.
  EXPECT_EQ(r.out.rfind("estimated step: ", 0), 0u) << r.out;
  EXPECT_THAT(r.out, HasSubstr(" on the host backend (each CPU kernel timed on a cut-down copy of its call"));
  EXPECT_THAT(r.out, HasSubstr("\nwatchdog: stops the run after 5.0 min without a completed task (default: 3 x the "
                               "estimated step, at least 5.0 min)\n"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("to shrink the step")));
}

TEST_F(LiveRun, DataParallelStepRunsTheProgram) {
  const std::vector<std::string> args = joined(kCpuSized, kDataParallel);
  const fixtures::CliResult r = live(4, joined(args, {"--trace", path("live.json")}));
  ASSERT_EQ(r.code, 0) << r.err;
  expect_program_executed(program_of(args), read_chrome_trace_file(path("live.json")), r.out);
}

// All-to-alls over MPI_Alltoall, each member's blocks checked: context
// parallelism's Ulysses exchange (TP 2 x CP 2), a2a+p2p's all-to-alls over
// pairs and ring over pairs (CP 4 = 2 x 2), and expert parallelism's
// dispatch and combine (TP 2 x DP 2, EP 2, 4 experts, the sequence-parallel
// collectives beside the compute under tp_comm_overlap; and DP 4 under ZeRO-3,
// whose experts are gathered and reduce-scattered over expert-data-parallel pairs).
TEST_F(LiveRun, AllToAllsOfUlyssesAndExpertParallelismRunTheProgram) {
  const std::vector<std::string> ulysses = {"--set", "pipeline_model_parallel_size=1", "--set",
                                            "context_parallel_size=2", "--set", "cp_comm_type=a2a"};
  const std::vector<std::string> hierarchical = {
      "--set", "pipeline_model_parallel_size=1", "--set", "tensor_model_parallel_size=1",
      "--set", "context_parallel_size=4",        "--set", "cp_comm_type=a2a+p2p",
      "--set", "hierarchical_context_parallel_sizes=[2,2]"};
  const std::vector<std::string> experts = {
      "--set", "pipeline_model_parallel_size=1",  "--set", "model.num_experts=4",          "--set",
      "model.num_experts_per_tok=2",              "--set", "model.moe_intermediate_size=256", "--set",
      "expert_model_parallel_size=2",             "--set", "sequence_parallel=true",
      "--set", "tp_comm_overlap=true"};
  const std::vector<std::string> sharded_experts =
      joined(experts, {"--set", "tensor_model_parallel_size=1", "--set", "zero_stage=3"});
  for (const std::vector<std::string>& layout : {ulysses, hierarchical, experts, sharded_experts}) {
    const std::vector<std::string> args = joined(kCpuSized, layout);
    const Program program = program_of(args);
    ASSERT_TRUE(std::any_of(program.tasks.begin(), program.tasks.end(),
                            [](const Task& t) { return t.kind == TaskKind::ALLTOALL; }));
    const fixtures::CliResult r = live(4, joined(args, {"--trace", path("live.json")}));
    ASSERT_EQ(r.code, 0) << r.err;
    expect_program_executed(program, read_chrome_trace_file(path("live.json")), r.out);
    std::filesystem::remove(path("live.json"));
  }
}

TEST_F(LiveRun, ScaledDownRunSaysWhatWasScaled) {
  const std::vector<std::string> args = joined(kCpuSized, {"--layers", "4", "--micro-batches", "2"});
  const fixtures::CliResult r = live(4, joined(args, {"--trace", path("live.json")}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("layers 8 -> 4; micro-batches 8 -> 2 (global batch 8 -> 2)"));
  const RecordedStep step = read_chrome_trace_file(path("live.json"));
  const Program scaled = program_of(joined(kCpuSized, {"--set", "num_hidden_layers=4", "--set", "global_batch_size=2"}));
  expect_program_executed(scaled, step, r.out);
  // The trace is of the Program that ran, and says how to build it again.
  EXPECT_EQ(step.made_by, "live");
  EXPECT_EQ(step.program_hash, program_hash(scaled));
  EXPECT_EQ(step.origin.scenario, "tiny-4gpu");
  EXPECT_THAT(step.origin.overrides,
              ::testing::ElementsAre("hidden_size=128", "intermediate_size=512", "num_attention_heads=4", "seq_length=128",
                                     "vocab_size=1024", "model.num_hidden_layers=4", "training.global_batch_size=2"));
}

TEST_F(LiveRun, CompareAgainstTheSimulationAndCalibrate) {
  const std::vector<std::string> args = joined(kCpuSized, kDataParallel);
  ASSERT_EQ(live(4, joined(args, {"--trace", path("live.json")})).code, 0);
  const fixtures::CliResult sim = fixtures::run_simtrain(joined({"simulate", "tiny-4gpu", "--quiet", "--trace", path("sim.json"), "--trace-ranks", "all"}, args));
  ASSERT_EQ(sim.code, 0) << sim.err;
  const fixtures::CliResult compared = fixtures::run_simtrain(
      {"compare", path("sim.json"), path("live.json"), "--calibrate", path("db.json"), "--json", path("cmp.json")});
  ASSERT_EQ(compared.code, 0) << compared.err;
  EXPECT_THAT(compared.out, HasSubstr("ALLREDUCE"));
  EXPECT_THAT(compared.out, HasSubstr("step"));
  const ProfileDatabase database = load_profile_database(path("db.json"));
  EXPECT_EQ(database.device_name, "host CPU (MPI backend)");
  EXPECT_FALSE(database.entries.empty());
  const fixtures::CliResult swapped = fixtures::run_simtrain({"compare", path("live.json"), path("sim.json")});
  EXPECT_EQ(swapped.code, 2);
  EXPECT_THAT(swapped.err, HasSubstr("live.json: is a live trace (otherData.source = live); compare takes SIM LIVE"));
}

TEST_F(LiveRun, BadInputIsSaidOnce) {
  const fixtures::CliResult r = live(4, {"--inject-fault", "explode:1:2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("simtrain: --inject-fault: 'explode:1:2' is not "));
  EXPECT_EQ(r.err.find("simtrain:"), r.err.rfind("simtrain:")) << "said more than once:\n" << r.err;
}

TEST_F(LiveRun, FailedTaskIsReportedOnceByOneRank) {
  const Program program = program_of(kCpuSized);
  const std::string task = std::to_string(program.rank_tasks(1)[program.rank_tasks(1).size() / 2]);
  const fixtures::CliResult r = live(4, joined(kCpuSized, {"--inject-fault", "fail:1:" + task}), 120);
  EXPECT_EQ(r.code, 1) << r.err;
  const std::string line = "simtrain live: rank 1: task " + task + " failed (--inject-fault fail:1:" + task + ")\n";
  EXPECT_THAT(r.err, HasSubstr(line));
  EXPECT_EQ(r.err.find("simtrain live:"), r.err.rfind("simtrain live:")) << "said more than once:\n" << r.err;
}

TEST_F(LiveRun, WrongProcessCountIsRefused) {
  const fixtures::CliResult r = live(2, kCpuSized);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("simtrain:"), r.err.rfind("simtrain:")) << "said more than once:\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr("cluster.num_gpus: the scenario needs 4 processes (tp 2 x pp 2 x dp 1), the launcher "
                               "started 2 (mpirun -np 4)"));
}

TEST_F(LiveRun, OutOfMemoryIsRefusedBeforeLaunching) {
  const fixtures::CliResult r =
      live(4, {"--set", "seq_length=65536", "--set", "max_position_embeddings=65536", "--set", "hidden_size=16384",
               "--set", "intermediate_size=65536", "--set", "num_attention_heads=128"});
  EXPECT_EQ(r.code, 1) << r.err;
  // The first stage needs more (its optimizer zeroes the position table's gradients too), each said by rank.
  EXPECT_THAT(r.err, HasSubstr("simtrain: error: refused before launching anything: ranks 0, 1: out of memory: needs "));
  EXPECT_THAT(r.err, HasSubstr("; ranks 2, 3: out of memory: needs "));
  EXPECT_EQ(r.err.find("simtrain:"), r.err.rfind("simtrain:")) << "said more than once:\n" << r.err;
}

TEST_F(LiveRun, KilledRankEndsTheJobWithItsName) {
  const Program program = program_of(kCpuSized);
  const int task = program.rank_tasks(1)[program.rank_tasks(1).size() / 2];
  const fixtures::CliResult r = live(4, joined(kCpuSized, {"--timeout", "5", "--inject-fault", "kill:1:" + std::to_string(task)}), 120);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 124) << "the job hung";
  EXPECT_THAT(r.err, HasSubstr("rank 1"));
}

TEST_F(LiveRun, HungRankIsNamedAfterTheTimeout) {
  const Program program = program_of(kCpuSized);
  const int task = program.rank_tasks(1)[program.rank_tasks(1).size() / 2];
  const fixtures::CliResult r = live(4, joined(kCpuSized, {"--timeout", "2", "--inject-fault", "hang:1:" + std::to_string(task)}), 120);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no task completed for 2 s; rank 1 did not answer (dead or hung)"));
}

TEST_F(LiveRun, CheckpointIsWrittenResumedAndCorruptionRefused) {
  const std::string dir = path("ckpt");
  const fixtures::CliResult first = live(4, joined(kCpuSized, {"--layers", "2", "--checkpoint", dir}));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("checkpoint written     step 1, "));
  EXPECT_THAT(first.out, HasSubstr("(checkpoint.storage_write_GBps)"));

  const fixtures::CliResult second = live(4, joined(kCpuSized, {"--layers", "2", "--resume", dir, "--checkpoint", dir}));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("checkpoint verified    step 1, "));
  EXPECT_THAT(second.out, HasSubstr("checkpoint written     step 2, "));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir) / "shard-r0-s1.bin")) << "step 1 not cleaned up";

  {  // one flipped byte in rank 2's shard
    std::fstream shard(std::filesystem::path(dir) / "shard-r2-s2.bin", std::ios::in | std::ios::out | std::ios::binary);
    char byte = 0;
    shard.seekg(100), shard.get(byte), shard.seekp(100), shard.put(static_cast<char>(byte ^ 1));
  }
  const fixtures::CliResult corrupt = live(4, joined(kCpuSized, {"--layers", "2", "--resume", dir}));
  EXPECT_EQ(corrupt.code, 2);
  EXPECT_THAT(corrupt.err, HasSubstr("--resume: rank 2: "));
  EXPECT_THAT(corrupt.err, HasSubstr("shard-r2-s2.bin: SHA-256"));

  const fixtures::CliResult other = live(4, joined(kCpuSized, {"--layers", "4", "--resume", dir}));
  EXPECT_EQ(other.code, 2);
  EXPECT_THAT(other.err, HasSubstr("written for scenario tiny-4gpu"));
}

#endif  // SIMTRAIN_MPIEXEC

TEST(LiveCli, BadFaultSpecificationIsRefused) {
  const fixtures::CliResult r = fixtures::run_simtrain({"live", "tiny-4gpu", "--inject-fault", "explode:1:2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--inject-fault: 'explode:1:2' is not kill:RANK:TASK, hang:RANK:TASK or fail:RANK:TASK"));
}

TEST(LiveCli, CompareRefusesAMissingTrace) {
  const fixtures::CliResult r = fixtures::run_simtrain({"compare", "/nonexistent/sim.json", "/nonexistent/live.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/sim.json"));
}

TEST(CommunicatorPlan, OnePerGroupAndStreamAndOnePerDirection) {
  const Scenario scenario = load_scenario("tiny-4gpu");
  const Program program = build_program(scenario, build_workload(scenario));
  const CommunicatorPlan plan = plan_communicators(program);
  // tp0, tp1 on the compute stream and on the overlapped one (the backward's input-gradient all-reduces
  // beside its weight gradients); emb2, emb3 on the dp stream; sends 0->2, 1->3 and back.
  std::vector<std::string> names;
  for (const CommunicatorSpec& spec : plan.specs) names.push_back(spec.name);
  EXPECT_THAT(names, ::testing::ElementsAre("tp0 on compute", "tp0 on tp_overlap", "tp1 on compute", "tp1 on tp_overlap",
                                            "emb2 on dp", "emb3 on dp", "send 0->2", "send 1->3", "send 2->0",
                                            "send 3->1"));
  for (const Task& t : program.tasks)
    if (!is_compute(t.kind)) {
      const CommunicatorSpec& spec = plan.specs[plan.of_task(t)];
      EXPECT_NE(std::find(spec.ranks.begin(), spec.ranks.end(), t.rank), spec.ranks.end()) << task_name(program, t);
    }
}

}  // namespace
}  // namespace simtrain
