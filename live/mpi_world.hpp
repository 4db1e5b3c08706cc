#pragma once
// The ProcessWorld of a run launched by mpirun or srun.
#include <mpi.h>

#include <string>

#include "process_world.hpp"

namespace simtrain {

// Throws LiveError "what: MPI's message" unless `code` is MPI_SUCCESS.
void check_mpi(int code, const std::string& what);

class MpiWorld : public ProcessWorld {
public:
  // Calls MPI_Init_thread (MPI_THREAD_MULTIPLE) unless MPI is initialised.
  MpiWorld(int* argc, char*** argv);
  ~MpiWorld() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  std::vector<std::string> gather_bytes(const std::string& bytes) override;
  void broadcast(std::string& bytes, int root) override;
  std::map<int, std::string> exchange_status(const std::string& status, double seconds) override;
  bool status_pending() override;
  [[noreturn]] void abort(int exit_code) override;

  // MPI_COMM_WORLD's duplicate for the host backend's communicators.
  MPI_Comm communicator() const { return world_; }

private:
  bool initialized_here_ = false;
  int rank_ = 0, size_ = 1;
  MPI_Comm world_ = MPI_COMM_NULL;
  MPI_Comm status_ = MPI_COMM_NULL;  // the watchdog's, apart from the step's traffic
};

}  // namespace simtrain
