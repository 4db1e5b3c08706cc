#pragma once
// The files one command writes (--trace, --report, --csv, ...), under one
// policy: every path is checked before any work (its folder exists and can be
// written, it is not a folder, not one of the command's inputs, not another
// output's), and at the end all are written together: each regular file to a
// temporary file beside it, then all renamed into place with Ctrl-C held back,
// so that an interruption leaves every output as it was or complete. "-" is
// standard output; devices and FIFOs are written in place. A path ending ".gz"
// is written gzip-compressed (sim/base/gzip_stream.hpp); standard output never is.
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/base/atomic_file.hpp"

namespace simtrain {

class OutputFiles {
public:
  // `standard_output` receives the outputs named "-".
  explicit OutputFiles(std::ostream& standard_output) : standard_output_(standard_output) {}

  // Declares what `option` writes to; "" = not asked for. Throws InputError
  // (naming the option) if the path cannot be written or another output has it.
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
  std::vector<Output> outputs_;
};

}  // namespace simtrain
