#include <mpi.h>

#include <cstdlib>

#include "distribution.hpp"
#include "sim/engine/replay.hpp"

namespace simtrain {

namespace {

bool joined = false;

bool started_by_mpirun() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(variable)) return true;
  return false;
}

// Every rank's text, in rank order.
std::vector<std::string> all_gather(const std::string& mine, int size) {
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> texts;
  for (int r = 0; r < size; ++r) texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

}  // namespace

Distribution start_distribution(BatchSimulator local) {
  if (!started_by_mpirun()) return {0, 1, std::move(local)};
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);  // only this thread calls MPI
    joined = true;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1) return {0, 1, std::move(local)};
  // Rank r simulates batch items r, r + size, ...; all ranks then hold every figure.
  auto spread = [local, rank, size](const std::vector<const Scenario*>& batch, const std::function<void()>& on_done) {
    std::vector<const Scenario*> mine;
    for (size_t i = rank; i < batch.size(); i += size) mine.push_back(batch[i]);
    nlohmann::json figures = nlohmann::json::array();
    try {
      for (const StepFigures& f : local(mine, on_done)) figures.push_back(to_json(f));
    } catch (const Interrupted&) {
      figures = "interrupted";  // the others learn it at the gather
    }
    std::vector<StepFigures> all(batch.size());
    const std::vector<std::string> texts = all_gather(figures.dump(), size);
    for (int r = 0; r < size; ++r) {
      const nlohmann::json theirs = nlohmann::json::parse(texts[r]);
      if (!theirs.is_array()) throw Interrupted();
      for (size_t k = 0; k < theirs.size(); ++k) all[r + k * size] = step_figures_from_json(theirs[k]);
    }
    return all;
  };
  return {rank, size, spread};
}

void stop_distribution() {
  if (joined) MPI_Finalize();
  joined = false;
}

}  // namespace simtrain
