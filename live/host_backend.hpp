#pragma once
// The host backend: the live executor's tasks on CPUs, so that everything
// but the device (launch, communicators, task order, timing, the trace) runs
// and is tested on machines without GPUs. Compute tasks run the CPU
// kernels (cpu_kernel.hpp: GEMMs and attention on OpenBLAS, the others the
// reference kernels) on buffers of the ops' real shapes;
// collectives, sends and receives are MPI calls on real buffers, and every
// result is checked: each rank contributes its index in the group plus one,
// so a sum is known in closed form, and a transfer carries its SEND's id.
#include <map>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "cpu_kernel.hpp"
#include "kernel_call.hpp"
#include "mpi_world.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

class HostBackend : public Backend {
public:
  HostBackend(MpiWorld& world, const Scenario& scenario);
  ~HostBackend() override;

  std::string device() const override { return "host CPU (MPI backend)"; }
  double bytes_needed(const Program& program, int rank) const override;
  double bytes_available() const override;
  WorkEstimate estimate_works(const Program& program, int rank) const override;
  void prepare(const Program& program, int rank, const CommunicatorPlan& plan,
               const std::vector<TaskQueue>& queues) override;
  void start() override;
  void issue(const Task& task, int queue, const std::vector<int>& local_deps) override;
  RankRecord collect() override;
  long long checked_collectives() const override { return checked_.load(); }

private:
  void compute(const Task& task, std::vector<double>& op_seconds);
  void collective(const Task& task, std::vector<float>& buffer);
  void send(const Task& task, std::vector<float>& buffer);
  void receive(const Task& task, std::vector<float>& buffer, TaskTiming& timing);
  double now() const;

  MpiWorld& world_;
  KernelContext context_;
  Dtype dtype_;
  const Program* program_ = nullptr;
  const CommunicatorPlan* plan_ = nullptr;
  int local_ranks_ = 1;  // processes on this host, which share its memory
  int tag_limit_ = 32767;
  std::vector<MPI_Comm> communicators_;       // by plan index; MPI_COMM_NULL where not a member
  std::map<std::string, std::unique_ptr<CpuKernel>> kernels_;  // by KernelCall::description()
  std::vector<std::vector<float>> buffers_;   // one per queue
  double start_ = 0;
  std::vector<TaskTiming> timings_;           // by task id
  std::vector<std::vector<double>> op_seconds_;
  std::atomic<long long> checked_{0};
};

}  // namespace simtrain
