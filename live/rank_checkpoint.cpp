#include "rank_checkpoint.hpp"

#include <algorithm>
#include <cmath>

#include "backend.hpp"
#include "checkpoint.hpp"
#include "sim/base/input_error.hpp"
#include "sim/step/memory_model.hpp"

namespace simtrain {

namespace {

// Sums the ranks' bytes and takes the slowest rank's seconds, at rank 0.
CheckpointFigures gather_figures(ProcessWorld& world, int64_t step, const TransferTiming& timing) {
  CheckpointFigures figures{step};
  for (const std::vector<double>& rank : world.gather({double(timing.bytes), timing.seconds})) {
    figures.bytes += rank[0];
    figures.slowest_seconds = std::max(figures.slowest_seconds, rank[1]);
  }
  return figures;
}

}  // namespace

CheckpointFigures resume_checkpoint(ProcessWorld& world, const std::string& dir, const Scenario& scenario) {
  TransferTiming timing;
  CheckpointManifest manifest;
  std::string error;
  try {
    const int64_t rank = world.rank();
    manifest = verify_checkpoint(dir, checkpoint_identity(scenario), {&rank, 1}, &timing);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (const std::string errors = agree_on_errors(world, error); !errors.empty())
    throw InputError("--resume", "", errors);
  return gather_figures(world, manifest.step, timing);
}

CheckpointFigures write_live_checkpoint(ProcessWorld& world, const std::string& dir, const Scenario& scenario,
                                        const Workload& workload, const Program& program, int64_t step) {
  const int rank = world.rank();
  // Every rank knows every shard's size and file name; only the checksums travel.
  std::vector<uint64_t> bytes;
  for (double b : checkpoint_bytes_per_rank(scenario, workload, program)) bytes.push_back(std::llround(b));
  TransferTiming timing;
  std::string sha256, error;
  try {
    sha256 = write_shard(dir, rank, step, bytes[rank], &timing).sha256;
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (const std::string errors = agree_on_errors(world, error); !errors.empty())
    throw AgreedLiveError("checkpoint not written (the previous one, if any, is intact): " + errors);
  // Every shard is on disk (the agreement above waited for all): the manifest commits them.
  const std::vector<std::string> checksums = world.gather_bytes(sha256);
  const CheckpointFigures figures = gather_figures(world, step, timing);
  if (rank == 0) {
    CheckpointManifest manifest = manifest_for(checkpoint_identity(scenario), step);
    for (size_t r = 0; r < checksums.size(); ++r)
      manifest.shards.push_back({int64_t(r), shard_file_name(int64_t(r), step), bytes[r], checksums[r]});
    write_manifest(dir, manifest);
  }
  world.barrier();  // no rank reports the checkpoint before its manifest is in place
  return figures;
}

}  // namespace simtrain
