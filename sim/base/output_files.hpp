#pragma once
// The files one command writes (--trace, --report, --csv, ...), under one
// policy: every path is checked before any work (its folder exists and can be
// written, it is not a folder, not one of the command's inputs, not another
// output's), and at the end all are written together: each regular file to a
// temporary file beside it, then all renamed into place with Ctrl-C held back,
// so that an interruption leaves every output as it was or complete. An
// output that is an existing regular file (through its symbolic links) is
// refused unless the command was given --force (ExistingFiles::replace): one
// overwrite rule for every command. "-" is standard output; devices and FIFOs
// are written in place (never refused). A path ending ".gz" is written
// gzip-compressed (sim/base/gzip_stream.hpp); standard output never is.
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/atomic_file.hpp"

namespace simtrain {

// What becomes of an output that is an existing regular file.
enum class ExistingFiles { refuse, replace };

class OutputFiles {
public:
  // `standard_output` receives the outputs named "-".
  explicit OutputFiles(std::ostream& standard_output, ExistingFiles existing = ExistingFiles::refuse)
      : standard_output_(standard_output), existing_(existing) {}

  // Declares what `option` writes to; "" = not asked for. Throws InputError
  // (naming the option) if the path cannot be written, another output has it,
  // or it is an existing regular file that may not be replaced.
  void add(const std::string& option, const std::string& path);
  // Throws InputError if an output is one of `input_paths` (files that exist).
  void refuse_inputs(const std::vector<std::string>& input_paths) const;

  bool wanted(const std::string& option) const;
  bool writes_standard_output() const;

  // Writes every declared output whose option has content here. Throws OutputError.
  void write(const std::vector<std::pair<std::string, ContentWriter>>& contents) const;

private:
  struct Output {
    std::string option, path;
    OutputTarget target;  // unused for "-"
  };
  const Output* find(const std::string& option) const;

  std::ostream& standard_output_;
  ExistingFiles existing_;
  std::vector<Output> outputs_;
};

}  // namespace simtrain
