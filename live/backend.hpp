#pragma once
// What the live executor needs from the machine it runs on: communicators,
// a way to run one task, and the times it measured. Two backends: the host
// backend (MPI + the CPU kernels, host_backend.hpp) and the CUDA
// backend (NCCL + the kernels of kernels/cuda, cuda_backend.hpp).
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "communicator_plan.hpp"
#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"

namespace simtrain {

// A live run cannot go on: a wrong collective result, a device out of memory,
// a peer that stopped answering. The message says what and where.
class LiveError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A failure every rank agreed on (agree_on_errors) and throws alike: rank 0
// alone reports it.
class AgreedLiveError : public LiveError {
public:
  using LiveError::LiveError;
};

// What one rank measured, for its own tasks (Program::rank_tasks order).
struct RankRecord {
  std::vector<int> task_ids;
  std::vector<TaskTiming> timings;             // seconds since the backend's start()
  std::vector<std::vector<double>> op_seconds; // compute tasks: each op of the task's Work
};

// What a rank's device is expected to take for each work of a Program
// (indexed like program.works; 0 for works the rank does not run), and what
// the expectation rests on, for the report.
struct WorkEstimate {
  std::vector<double> work_seconds;
  std::string basis;
};

class Backend {
public:
  virtual ~Backend() = default;

  // What runs the tasks, for the report: "host CPU (MPI backend)", CUDA's device name.
  virtual std::string device() const = 0;

  // Bytes prepare() would allocate for this rank's tasks, and the bytes free
  // for them on the device; the runner refuses to start when the first
  // exceeds the second, or when bytes_needed throws (a task the backend
  // cannot run).
  virtual double bytes_needed(const Program& program, int rank) const = 0;
  virtual double bytes_available() const = 0;

  // Called by every rank at once, before prepare(): the runner estimates the
  // step from it (step_estimate.hpp) and scales the watchdog's timeout.
  virtual WorkEstimate estimate_works(const Program& program, int rank) const = 0;

  // Collective over every rank: creates the communicators of `plan` this
  // rank belongs to, and the buffers and kernels of its tasks; `queues` are
  // the rank's task queues, whose index issue() receives.
  virtual void prepare(const Program& program, int rank, const CommunicatorPlan& plan,
                       const std::vector<TaskQueue>& queues) = 0;

  // Synchronises the ranks; task times are measured from here.
  virtual void start() = 0;

  // Runs `task` on queue `queue` once `local_deps` (tasks of this rank,
  // already issued) have completed. The host backend runs it before
  // returning; the CUDA backend enqueues it on the queue's stream.
  virtual void issue(const Task& task, int queue, const std::vector<int>& local_deps) = 0;

  // Tasks completed so far; the executor's watchdog reads it from its thread.
  int completed_tasks() const { return completed_.load(); }

  // Waits until every issued task has completed and returns their times.
  virtual RankRecord collect() = 0;

  // Collectives whose result was checked, and how many were wrong (a wrong
  // one also throws LiveError from issue() or collect()).
  virtual long long checked_collectives() const = 0;

protected:
  std::atomic<int> completed_{0};
};

}  // namespace simtrain
