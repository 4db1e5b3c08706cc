#pragma once
// Where a search's simulations run: this process's cores, or, when simtrain
// is built with MPI and started by mpirun, every rank's cores, each rank
// simulating its share of every round and all ranks gathering all figures,
// so every rank runs the same search. Rank 0 prints and writes.
#include "sim/search/search.hpp"

namespace simtrain {

struct Distribution {
  int rank = 0;
  int size = 1;
  BatchSimulator simulator;
};

// Joins MPI when started by mpirun (with MPI built in); `local` runs this process's share.
Distribution start_distribution(BatchSimulator local);
// Leaves MPI if start_distribution joined it.
void stop_distribution();

}  // namespace simtrain
