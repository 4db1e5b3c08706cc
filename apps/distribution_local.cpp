// Built without MPI: every search runs in this process.
#include "distribution.hpp"

namespace simtrain {

Distribution start_distribution(BatchSimulator local) { return {0, 1, std::move(local)}; }

void stop_distribution() {}

}  // namespace simtrain
