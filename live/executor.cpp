#include "executor.hpp"

#include <csignal>
#include <cstdio>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "sim/base/input_error.hpp"

namespace simtrain {

InjectedFault parse_injected_fault(const std::string& text, const std::string& option) {
  const std::map<std::string, InjectedFault::Kind> kinds = {
      {"kill", InjectedFault::Kind::kill}, {"hang", InjectedFault::Kind::hang}, {"fail", InjectedFault::Kind::fail}};
  InjectedFault fault;
  char kind[8] = {};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4[a-z]:%d:%d%n", kind, &fault.rank, &fault.task, &consumed) != 3 ||
      consumed != static_cast<int>(text.size()) || !kinds.count(kind))
    throw InputError(option, "", "'" + text + "' is not kill:RANK:TASK, hang:RANK:TASK or fail:RANK:TASK");
  fault.kind = kinds.at(kind);
  return fault;
}

namespace {

using Clock = std::chrono::steady_clock;

// Which tasks of the rank were issued, for the queues that wait on them.
class IssuedTasks {
public:
  explicit IssuedTasks(size_t tasks) : issued_(tasks, 0) {}

  void wait_for(int id) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return issued_[id] != 0; });
  }
  void mark(int id) {
    {
      std::lock_guard lock(mutex_);
      issued_[id] = 1;
    }
    changed_.notify_all();
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<char> issued_;
};

// A hung process is stopped whole (SIGSTOP), as a hung node would be: its
// watchdog does not answer either.
[[noreturn]] void inject(const InjectedFault& fault) {
  if (fault.kind == InjectedFault::Kind::fail) {
    char message[96];
    std::snprintf(message, sizeof message, "task %d failed (--inject-fault fail:%d:%d)", fault.task, fault.rank,
                  fault.task);
    throw LiveError(message);
  }
  std::raise(fault.kind == InjectedFault::Kind::kill ? SIGKILL : SIGSTOP);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// What each queue is at, for the watchdog's message.
std::string waiting_for(const Program& program, const std::vector<TaskQueue>& queues,
                        const std::vector<std::atomic<int>>& current) {
  std::string text;
  for (size_t q = 0; q < queues.size(); ++q) {
    const int id = current[q].load();
    if (id < 0) continue;
    const Task& t = program.tasks[id];
    text += (text.empty() ? "" : "; ") + to_string(queues[q].stream) + " queue at '" + task_name(program, t) + "'";
    if (t.kind == TaskKind::RECV) text += " from rank " + std::to_string(t.peer);
    if (t.kind == TaskKind::SEND) text += " to rank " + std::to_string(t.peer);
    if (is_collective(t.kind)) {
      text += " with ranks";
      for (int r : program.groups[t.group].ranks) text += " " + std::to_string(r);
    }
  }
  return text.empty() ? "its queues are done; waiting for the other ranks" : text;
}

}  // namespace

RankRecord execute_rank(const Program& program, int rank, Backend& backend, const std::vector<TaskQueue>& queues,
                        const ExecutorOptions& options) {
  IssuedTasks issued(program.tasks.size());
  std::vector<std::atomic<int>> current(queues.size());
  for (auto& c : current) c = -1;

  std::mutex watchdog_mutex;
  std::condition_variable watchdog_wake;
  bool finished = false;
  std::thread watchdog([&] {
    int last_completed = -1;
    Clock::time_point last_progress = Clock::now();
    std::unique_lock lock(watchdog_mutex);
    while (!watchdog_wake.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished; })) {
      const int completed = backend.completed_tasks();
      if (completed != last_completed) last_completed = completed, last_progress = Clock::now();
      if (Clock::now() - last_progress > std::chrono::duration<double>(options.timeout_seconds) ||
          options.peer_stalled())
        options.on_stall(waiting_for(program, queues, current));
    }
  });

  std::vector<std::thread> threads;
  for (size_t q = 0; q < queues.size(); ++q)
    threads.emplace_back([&, q] {
      try {
        for (int id : queues[q].tasks) {
          const Task& task = program.tasks[id];
          std::vector<int> local_deps;
          for (int dep : program.deps(task))
            if (program.tasks[dep].rank == rank) local_deps.push_back(dep), issued.wait_for(dep);
          current[q] = id;
          if (options.fault && options.fault->rank == rank && options.fault->task == id) inject(*options.fault);
          backend.issue(task, static_cast<int>(q), local_deps);
          issued.mark(id);
        }
        current[q] = -1;
      } catch (const std::exception& e) {
        options.on_error(e.what());
      }
    });
  for (std::thread& t : threads) t.join();

  RankRecord record;
  try {
    record = backend.collect();
  } catch (const std::exception& e) {
    options.on_error(e.what());
  }
  {
    std::lock_guard lock(watchdog_mutex);
    finished = true;
  }
  watchdog_wake.notify_all();
  watchdog.join();
  return record;
}

}  // namespace simtrain
