#pragma once
// Writes an output file so that it is either complete or as it was: the
// content goes to a temporary file beside it, which is synced and renamed
// over it. A symbolic link is written through (its target is replaced); a
// path that is not a regular file (a device such as /dev/null, a FIFO,
// /dev/stdout) is written to directly, never replaced.
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>

namespace simtrain {

using ContentWriter = std::function<void(std::ostream&)>;

// Where writing `path` lands.
struct OutputTarget {
  std::string path;     // the file itself: `path` with its symbolic links followed
  bool exists = false;
  bool direct = false;  // not a regular file: written to in place
};

// Throws InputError naming `path` if nothing can be written there: a folder,
// a missing folder, no write permission.
OutputTarget output_target(const std::string& path);

// A regular file's new content, written to a temporary file beside it until
// commit() renames it into place; destroyed uncommitted, it removes the
// temporary file. While it exists, Ctrl-C handled by interrupt_guard.hpp
// removes the temporary file too.
class StagedFile {
public:
  StagedFile(const OutputTarget& target, const ContentWriter& write);  // throws OutputError
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile();
  void commit();

private:
  std::string path_, temporary_;
  bool committed_ = false;
};

// Writes a device, FIFO or other non-regular file in place; throws OutputError.
void write_in_place(const OutputTarget& target, const ContentWriter& write);

// A failure to write an output the user asked for (disk full, I/O error):
// not an input error, the CLI exits with code 1.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One file, with Ctrl-C and termination signals held back until it is in
// place. Throws InputError if the path cannot be written, OutputError if
// writing fails.
void write_file_atomically(const std::string& path, const ContentWriter& write);

}  // namespace simtrain
