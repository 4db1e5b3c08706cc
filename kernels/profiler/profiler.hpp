#pragma once
// The profiler: times every kernel a scenario needs on this machine's GPU and
// writes a kernel-profile database (sim/model/profile_database.hpp). Used by
// `simtrain profile` and by the standalone `simtrain-profile`.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/output_files.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

struct ProfileOptions {
  bool sweep = false;                 // also the standard grid of shapes (profile_plan.hpp)
  std::string command_line;           // recorded in the database
  std::ostream* progress = nullptr;   // one line per kernel, if given
  ExistingFiles existing_files = ExistingFiles::refuse;  // an existing database: replaced with --force
};

// Times profile_plan(scenarios, options.sweep) on GPU 0 and returns the
// database. Throws std::runtime_error where there is no usable GPU, or where
// this build has no CUDA kernels; an op that cannot run (out of memory, a
// shape a kernel does not support) is listed under "skipped" instead.
nlohmann::json profile_kernels(const std::vector<Scenario>& scenarios, const ProfileOptions& options);

// profile_kernels written to `path` ("-": standard output) under the output
// policy of output_files.hpp: the path is checked before any kernel runs.
void write_kernel_profile(const std::vector<Scenario>& scenarios, const std::string& path, const ProfileOptions& options);

// argv joined as a shell would need it, for the record.
std::string command_line(int argc, const char* const* argv);

}  // namespace simtrain
