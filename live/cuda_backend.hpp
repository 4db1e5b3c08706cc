#pragma once
// The CUDA backend of live runs (backend.hpp): NCCL for communication, the
// kernels of kernels/cuda (through the profiler's PreparedKernel) for
// compute, CUDA events for the times. Built where SIMTRAIN_BUILD_KERNELS is
// on and NCCL is found (live/cuda_backend.cmake).
//
// NOT YET RUN ON A GPU: written and compiled (nvcc 13, NCCL 2.28 headers)
// on a machine without one.
//
// What each method does on the device:
// - prepare(): one NCCL communicator per CommunicatorPlan spec this rank is
//   in (the spec's first rank makes the unique id, ProcessWorld::broadcast
//   hands it to every rank, all created in one ncclGroupStart/End); a
//   non-blocking stream per task queue; a PreparedKernel per distinct kernel
//   call of the rank's compute tasks; one device buffer per queue, of the
//   largest communication of that queue; then a warm-up: every kernel once,
//   every distinct collective and transfer once (communicators in plan
//   order), so that lazy module loading and NCCL's lazy connections are not
//   timed in the step.
// - issue(): enqueues only (the CPU does not wait): waits on the end events
//   of the local dependencies, records the task's start event, then its ops
//   (an event after each) or its NCCL calls, then its end event.
//   Collectives run on bf16 elements, in place, `count` times: all-reduce on
//   task.bytes; reduce-scatter from task.bytes to a 1/n share; all-gather
//   from a 1/n share to task.bytes (element counts rounded up to a multiple
//   of the group size). SEND/RECV move task.bytes as bytes to/from the
//   other rank of their two-rank communicator (index 0: the sender).
// - The checked collectives: the first all-reduce of each communicator (in
//   the rank's task order) runs out of place on float elements (the same
//   bytes) from an input filled with (communicator rank + 1); after the
//   step, collect() copies its output back and requires every element to be
//   n(n+1)/2, exact in float for any group size and reduction order.
// - Work::fixed_seconds (the stated cost of gradient compression) is not
//   run: a compute task is its ops only.
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "process_world.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

class CudaBackend : public Backend {
public:
  // `device` < 0: the launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK,
  // MPI_LOCALRANKID, SLURM_LOCALID, LOCAL_RANK; 0 without any), modulo the
  // visible devices. The world's ranks are the Program's ranks. Throws
  // LiveError where there is no CUDA device.
  CudaBackend(ProcessWorld& world, const Scenario& scenario, int device = -1);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string device() const override;  // cudaGetDeviceProperties' name
  double bytes_needed(const Program& program, int rank) const override;
  double bytes_available() const override;  // cudaMemGetInfo's free bytes
  WorkEstimate estimate_works(const Program& program, int rank) const override;
  void prepare(const Program& program, int rank, const CommunicatorPlan& plan,
               const std::vector<TaskQueue>& queues) override;
  void start() override;
  void issue(const Task& task, int queue, const std::vector<int>& local_deps) override;
  RankRecord collect() override;
  long long checked_collectives() const override;

  // ncclCommAbort on every communicator, from any thread: what the executor's
  // watchdog calls before ending the process, so that no NCCL kernel or
  // proxy thread waits forever on a dead peer. A collect() in progress then
  // throws LiveError; the backend cannot be used after it.
  void abort_communicators();

  // The device a process with no explicit one uses (see the constructor).
  static int local_rank_device();

private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace simtrain
