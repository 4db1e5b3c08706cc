#pragma once
// Runs one rank's tasks of a Program on a Backend: a thread per task queue
// (task_queues in program.hpp), each issuing its tasks in order once the
// tasks they depend on, on this rank, were issued. The backend makes the
// order hold on the device: the host backend runs a task before returning,
// the CUDA backend makes the queue's stream wait for the dependencies' events.
// Dependencies on other ranks (a RECV's SEND) are the communication itself.
//
// A watchdog ends the run when no task completes for `timeout_seconds`, or
// when another rank's watchdog did: a peer died or hangs. It says which task
// each of this rank's queues waits for, so the caller can name the missing
// peer (live_run.cpp).
#include <functional>
#include <optional>
#include <string>

#include "backend.hpp"
#include "sim/program/program.hpp"

namespace simtrain {

// A fault to inject, to test that a run stops cleanly: rank `rank` is killed
// (SIGKILL), stopped (SIGSTOP: it hangs) or its task fails (a LiveError, as
// a wrong collective result would be) when it reaches task `task`.
struct InjectedFault {
  enum class Kind { kill, hang, fail };
  Kind kind = Kind::kill;
  int rank = 0;
  int task = 0;
};
// "kill:RANK:TASK", "hang:RANK:TASK" or "fail:RANK:TASK"; throws InputError naming `option`.
InjectedFault parse_injected_fault(const std::string& text, const std::string& option);

struct ExecutorOptions {
  double timeout_seconds = 300;
  std::optional<InjectedFault> fault;
  // Called (from the watchdog's thread) when the run stalled here, or
  // another rank stopped (`peer_stalled`: it stalled or failed), with what
  // each queue waits for; it must end the process.
  std::function<void(const std::string& waiting_for)> on_stall;
  std::function<bool()> peer_stalled = [] { return false; };
  // Called (from a queue's thread) when a task failed; it must end the process.
  std::function<void(const std::string& error)> on_error;
};

// Issues every task of `rank`, then collects the backend's times.
RankRecord execute_rank(const Program& program, int rank, Backend& backend, const std::vector<TaskQueue>& queues,
                        const ExecutorOptions& options);

}  // namespace simtrain
