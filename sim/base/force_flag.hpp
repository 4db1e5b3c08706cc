#pragma once
// The flag of the one overwrite rule (sim/base/output_files.hpp), header-only
// for the CLI11 command lines of apps/ and live/: every command that writes
// files takes --force, and without it refuses to write over an existing file.
#include <CLI/CLI.hpp>

#include "sim/base/output_files.hpp"

namespace simtrain {

struct ForceFlag {
  bool force = false;

  void add_to(CLI::App& command) { command.add_flag("--force", force, "replace output files that exist"); }
  ExistingFiles existing_files() const { return force ? ExistingFiles::replace : ExistingFiles::refuse; }
};

}  // namespace simtrain
