#pragma once
// The processes of a live run, one per GPU, as the launcher (mpirun, srun)
// started them: which one this is, and the few host-side exchanges the
// runner needs besides the backends' communicators.
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace simtrain {

class ProcessWorld {
public:
  virtual ~ProcessWorld() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  // Every rank's `bytes`, at rank 0 (empty on the others).
  virtual std::vector<std::string> gather_bytes(const std::string& bytes) = 0;
  // The same for numbers.
  std::vector<std::vector<double>> gather(const std::vector<double>& values);
  // `bytes` of rank `root`, on every rank (the NCCL unique ids).
  virtual void broadcast(std::string& bytes, int root) = 0;
  // Watchdog, from any thread: tells every other rank this one's `status`
  // and listens for theirs for `seconds`; returns what arrived, by rank
  // (this rank's own included). A rank that sends nothing is dead or hung.
  virtual std::map<int, std::string> exchange_status(const std::string& status, double seconds) = 0;
  // Whether another rank's status has arrived: it began an exchange, which
  // this rank should join at once, stalled or not.
  virtual bool status_pending() = 0;
  // Ends every process of the run with `exit_code`.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// Collective: what went wrong on any rank (`error` empty where nothing
// did), on every rank, as grouped_by_rank says it; "" if all went well.
// A refusal on one rank must be a refusal on all, or the others would wait
// for it in their next collective call.
std::string agree_on_errors(ProcessWorld& world, const std::string& error);

// Each distinct message of `by_rank` once, after the ranks that have it, in
// the order of its lowest rank: "rank 2: X; ranks 0, 1: Y" ("every rank: Y"
// where all `world_size` ranks have it). Empty messages are left out.
std::string grouped_by_rank(const std::map<int, std::string>& by_rank, int world_size,
                            const std::string& separator = "; ");

// This process's rank as the launcher (mpirun, srun) numbers it, read from
// its environment before MPI starts (OMPI_COMM_WORLD_RANK, PMIX_RANK,
// PMI_RANK, SLURM_PROCID); 0 without one. A command-line error is the same
// on every rank: the process of rank 0 alone prints it.
int launcher_rank();
// The exit code of a rank other than 0 that refuses what every rank refuses:
// 0, because rank 0 says why and its exit code is the job's. A non-zero code
// here would make mpirun abort rank 0 before it had said anything.
constexpr int kQuietRankExitCode = 0;
// The first of these environment variables that holds a rank (a
// non-negative integer); 0 where none does.
int rank_from_environment(std::initializer_list<const char*> variables);

// The world this process was launched in: MPI's when simtrain was built with
// MPI (MPI_THREAD_MULTIPLE: the queues of a rank run on threads), otherwise
// a world of one process.
std::unique_ptr<ProcessWorld> join_process_world(int* argc, char*** argv);

}  // namespace simtrain
