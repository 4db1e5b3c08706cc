#include "mpi_world.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "backend.hpp"

namespace simtrain {

void check_mpi(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw LiveError(what + ": " + std::string(text, length));
}

MpiWorld::MpiWorld(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    initialized_here_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE)
    throw std::runtime_error("this MPI library does not support MPI_THREAD_MULTIPLE, which live runs need");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm_dup(MPI_COMM_WORLD, &world_);
  MPI_Comm_dup(MPI_COMM_WORLD, &status_);
  // A dead peer must not end the watchdog's report before it is printed.
  MPI_Comm_set_errhandler(status_, MPI_ERRORS_RETURN);
}

MpiWorld::~MpiWorld() {
  MPI_Comm_free(&status_);
  MPI_Comm_free(&world_);
  if (initialized_here_) MPI_Finalize();
}

void MpiWorld::barrier() { check_mpi(MPI_Barrier(world_), "MPI_Barrier"); }

std::vector<std::string> MpiWorld::gather_bytes(const std::string& bytes) {
  int count = static_cast<int>(bytes.size());
  std::vector<int> counts(rank_ == 0 ? size_ : 0), offsets;
  check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world_), "MPI_Gather");
  std::string all;
  if (rank_ == 0) {
    int total = 0;
    for (int c : counts) offsets.push_back(total), total += c;
    all.resize(total);
  }
  check_mpi(MPI_Gatherv(bytes.data(), count, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR, 0, world_),
        "MPI_Gatherv");
  std::vector<std::string> result;
  for (size_t r = 0; r < counts.size(); ++r) result.push_back(all.substr(offsets[r], counts[r]));
  return result;
}

void MpiWorld::broadcast(std::string& bytes, int root) {
  int size = static_cast<int>(bytes.size());
  check_mpi(MPI_Bcast(&size, 1, MPI_INT, root, world_), "MPI_Bcast");
  bytes.resize(size);
  check_mpi(MPI_Bcast(bytes.data(), size, MPI_CHAR, root, world_), "MPI_Bcast");
}

std::map<int, std::string> MpiWorld::exchange_status(const std::string& status, double seconds) {
  std::vector<MPI_Request> sends;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request;
    if (MPI_Isend(status.data(), static_cast<int>(status.size()), MPI_CHAR, r, 0, status_, &request) == MPI_SUCCESS)
      sends.push_back(request);
  }
  std::map<int, std::string> statuses{{rank_, status}};
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (static_cast<int>(statuses.size()) < size_ && std::chrono::steady_clock::now() < until) {
    int arrived = 0;
    MPI_Status probe;
    if (MPI_Iprobe(MPI_ANY_SOURCE, 0, status_, &arrived, &probe) != MPI_SUCCESS) break;
    if (!arrived) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int length = 0;
    MPI_Get_count(&probe, MPI_CHAR, &length);
    std::string text(length, '\0');
    MPI_Recv(text.data(), length, MPI_CHAR, probe.MPI_SOURCE, 0, status_, MPI_STATUS_IGNORE);
    statuses[probe.MPI_SOURCE] = text;
  }
  return statuses;  // the sends to silent ranks stay pending: the run is about to be aborted
}

bool MpiWorld::status_pending() {
  int arrived = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, 0, status_, &arrived, MPI_STATUS_IGNORE);
  return arrived != 0;
}

void MpiWorld::abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

std::unique_ptr<ProcessWorld> join_process_world(int* argc, char*** argv) {
  return std::make_unique<MpiWorld>(argc, argv);
}

}  // namespace simtrain
