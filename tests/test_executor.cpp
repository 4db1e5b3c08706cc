// The live executor's order and watchdog, on a backend that only records
// (no MPI, no GPU): every task of the rank is issued once, each queue in
// Program order, each after its dependencies on the rank.
#include <atomic>
#include <condition_variable>
#include <mutex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "executor.hpp"
#include "sim/program/program_builder.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using ::testing::HasSubstr;

class RecordingBackend : public Backend {
public:
  explicit RecordingBackend(int block_at = -1) : block_at_(block_at) {}

  std::string device() const override { return "recording"; }
  double bytes_needed(const Program&, int) const override { return 0; }
  double bytes_available() const override { return 0; }
  WorkEstimate estimate_works(const Program&, int) const override { return {}; }
  void prepare(const Program&, int, const CommunicatorPlan&, const std::vector<TaskQueue>&) override {}
  void start() override {}
  long long checked_collectives() const override { return 0; }

  void issue(const Task& task, int, const std::vector<int>& local_deps) override {
    if (task.id == block_at_) {
      std::unique_lock lock(mutex_);
      released_.wait(lock, [&] { return release_; });
    }
    std::lock_guard lock(mutex_);
    for (int dep : local_deps)
      if (std::find(issued_.begin(), issued_.end(), dep) == issued_.end())
        errors_.push_back("task " + std::to_string(task.id) + " issued before its dependency " + std::to_string(dep));
    issued_.push_back(task.id);
    completed_ += 1;
  }
  RankRecord collect() override { return {}; }

  void release() {
    {
      std::lock_guard lock(mutex_);
      release_ = true;
    }
    released_.notify_all();
  }
  std::vector<int> issued() {
    std::lock_guard lock(mutex_);
    return issued_;
  }
  std::vector<std::string> errors() {
    std::lock_guard lock(mutex_);
    return errors_;
  }

private:
  int block_at_;
  std::mutex mutex_;
  std::condition_variable released_;
  bool release_ = false;
  std::vector<int> issued_;
  std::vector<std::string> errors_;
};

Program zb_program() {
  // Two pipeline stages, two data-parallel replicas, ZeRO-1: compute, p2p and dp queues.
  const Scenario s = load_scenario("tiny-4gpu", {"tensor_model_parallel_size=1", "num_gpus=4", "schedule=zb_h1",
                                                 "zero_stage=1", "global_batch_size=16"});
  return build_program(s, build_workload(s));
}

ExecutorOptions failing_options() {
  ExecutorOptions options;
  options.on_error = [](const std::string& error) { ADD_FAILURE() << error; };
  options.on_stall = [](const std::string& waiting) { ADD_FAILURE() << "stalled: " << waiting; };
  return options;
}

TEST(Executor, IssuesEveryTaskOnceInQueueOrderAfterItsDependencies) {
  const Program program = zb_program();
  for (int rank = 0; rank < program.world_size; ++rank) {
    RecordingBackend backend;
    const std::vector<TaskQueue> queues = task_queues(program, rank);
    EXPECT_GE(queues.size(), 3u) << "rank " << rank << ": expected compute, p2p and dp queues";
    execute_rank(program, rank, backend, queues, failing_options());
    EXPECT_THAT(backend.errors(), ::testing::IsEmpty());
    const std::vector<int> issued = backend.issued();
    const RankTaskIds listed = program.rank_tasks(rank);
    std::vector<int> sorted = issued, expected(listed.begin(), listed.end());
    std::sort(sorted.begin(), sorted.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(sorted, expected) << "rank " << rank << ": every task once";
    for (const TaskQueue& queue : queues) {
      std::vector<int> order;
      for (int id : issued)
        if (std::find(queue.tasks.begin(), queue.tasks.end(), id) != queue.tasks.end()) order.push_back(id);
      EXPECT_EQ(order, queue.tasks) << "rank " << rank << ", " << to_string(queue.stream) << " queue";
    }
  }
}

TEST(Executor, WatchdogSaysWhatEachQueueWaitsFor) {
  const Program program = zb_program();
  const int rank = 2;
  const std::vector<TaskQueue> queues = task_queues(program, rank);
  int blocked = -1;  // the rank's first receive
  for (int id : program.rank_tasks(rank))
    if (program.tasks[id].kind == TaskKind::RECV && blocked < 0) blocked = id;
  ASSERT_GE(blocked, 0);
  RecordingBackend backend(blocked);
  ExecutorOptions options = failing_options();
  options.timeout_seconds = 0.2;
  std::atomic<int> stalls = 0;
  std::string message;
  options.on_stall = [&](const std::string& waiting) {
    if (stalls++ == 0) message = waiting;
    backend.release();  // a real caller ends the process here
  };
  execute_rank(program, rank, backend, queues, options);
  EXPECT_GE(stalls.load(), 1);
  const Task& recv = program.tasks[blocked];
  EXPECT_THAT(message, HasSubstr("p2p queue at '" + task_name(program, recv) + "' from rank " + std::to_string(recv.peer)));
  EXPECT_EQ(backend.issued().size(), program.rank_tasks(rank).size());
}

TEST(Executor, FaultSpecificationIsParsed) {
  const InjectedFault fault = parse_injected_fault("hang:3:17", "--inject-fault");
  EXPECT_EQ(fault.kind, InjectedFault::Kind::hang);
  EXPECT_EQ(fault.rank, 3);
  EXPECT_EQ(fault.task, 17);
  EXPECT_EQ(parse_injected_fault("fail:0:2", "--inject-fault").kind, InjectedFault::Kind::fail);
  EXPECT_EQ(parse_injected_fault("kill:0:2", "--inject-fault").kind, InjectedFault::Kind::kill);
  for (const char* bad : {"hang:3", "kill:a:1", "kill:1:2:3", "stop:1:2", "fails:1:2", ""})
    EXPECT_THROW(parse_injected_fault(bad, "--inject-fault"), InputError) << bad;
}

}  // namespace
}  // namespace simtrain
