#pragma once
// A live step: the scenario's Program executed for real by every process of
// the run (one per GPU, launched by mpirun or srun), timed, checked, and
// written as the simulator's Chrome trace, so `simtrain compare` can set the
// two side by side.
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "executor.hpp"
#include "process_world.hpp"
#include "sim/base/output_files.hpp"

namespace simtrain {

struct LiveRequest {
  std::string scenario;                 // a file or a built-in name
  std::vector<std::string> overrides;   // --set key=value
  std::string backend = "host";         // "host" (MPI + CPU) or "cuda" (NCCL + CUDA)
  // Scaling down a scenario too large for the machine at hand:
  std::optional<int64_t> layers;         // num_hidden_layers
  std::optional<int64_t> micro_batches;  // per pipeline per step (sets global_batch_size)
  std::string trace_path;                // written by rank 0, atomically
  ExistingFiles existing_files = ExistingFiles::refuse;  // an existing trace_path: replaced with --force
  std::string checkpoint_dir;            // write every rank's shard of state after the step
  std::string resume_dir;                // verify a checkpoint before the step
  // No task completes for this long: the run stops. Default: from the
  // step's estimate (default_timeout_seconds in step_estimate.hpp).
  std::optional<double> timeout_seconds;
  std::optional<InjectedFault> fault;
};

// What the run prints when it stops before the step is done, from what its
// ranks said (ProcessWorld::exchange_status; a failed rank's status begins
// with failed_status): the failed ranks' errors (exit code 1), else that no
// task completed for the timeout, which ranks did not answer and where each
// other one waits (3).
inline constexpr const char* failed_status = "failed: ";
struct StopReport {
  std::string text;
  int exit_code = 1;
};
StopReport stop_report(const std::map<int, std::string>& statuses, int world_size, double timeout_seconds);

// Runs the step on this process's rank; rank 0 prints the step's estimate,
// then the report, to `out`.
// Returns the exit code. Throws InputError for a bad request (every rank
// alike) and LiveError for a failure.
int run_live(const LiveRequest& request, ProcessWorld& world, std::ostream& out, std::ostream& err);

}  // namespace simtrain
