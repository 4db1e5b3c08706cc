#include "sim/base/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/base/input_error.hpp"
#include "sim/base/interrupt_guard.hpp"

namespace simtrain {

namespace fs = std::filesystem;

namespace {

std::string reason_of(int error) { return std::strerror(error); }

// `path` with its symbolic links followed, except the kernel's own links
// (/dev/stdout -> /proc/self/fd/1 -> the shell's redirection): those name an
// open file that must be written in place, never replaced. Empty if so.
std::string follow_links(const std::string& path) {
  fs::path current = path;
  for (int hop = 0; hop < 40; ++hop) {
    std::error_code error;
    if (!fs::is_symlink(fs::symlink_status(current, error))) return current.string();
    const fs::path target = fs::read_symlink(current, error);
    if (error) return current.string();
    current = target.is_absolute() ? target : current.parent_path() / target;
    if (current.lexically_normal().string().rfind("/proc/", 0) == 0) return "";
  }
  throw InputError(path, "", "too many levels of symbolic links");
}

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

void check_writable(const std::string& path, int mode, const std::string& shown) {
  if (::access(path.c_str(), mode) != 0) throw InputError(shown, "", "cannot be written: " + reason_of(errno));
}

}  // namespace

OutputTarget output_target(const std::string& path) {
  if (path.empty()) throw InputError("(empty path)", "", "an output needs a file name");
  OutputTarget target;
  target.path = follow_links(path);
  if (target.path.empty()) {  // a kernel link to an open file: it exists, written in place
    target = {path, true, true};
    check_writable(path, W_OK, path);
    return target;
  }
  struct stat info = {};
  if (::stat(target.path.c_str(), &info) == 0) {
    target.exists = true;
    if (S_ISDIR(info.st_mode)) throw InputError(path, "", "is a directory");
    target.direct = !S_ISREG(info.st_mode);
    check_writable(target.path, W_OK, path);
    // A regular file is replaced by a new one created beside it.
    if (!target.direct) check_writable(folder_of(target.path), W_OK | X_OK, path);
    return target;
  }
  const std::string folder = folder_of(target.path);
  if (errno == ENOTDIR) throw InputError(path, "", "not in a folder: " + folder + " is not a directory");
  if (errno != ENOENT) throw InputError(path, "", "cannot be written: " + reason_of(errno));
  std::error_code error;
  if (!fs::exists(folder, error)) throw InputError(path, "", "no such folder: " + folder);
  check_writable(folder, W_OK | X_OK, path);
  return target;
}

StagedFile::StagedFile(const OutputTarget& target, const ContentWriter& write) : path_(target.path) {
  const fs::path destination(path_);
  temporary_ = (destination.parent_path() / ("." + destination.filename().string() + ".tmp" + std::to_string(::getpid()))).string();
  register_temporary_file(temporary_);
  try {
    std::ofstream out(temporary_, std::ios::binary | std::ios::trunc);
    if (!out) throw OutputError(path_ + ": cannot be written: " + reason_of(errno));
    write(out);
    out.flush();
    if (!out) throw OutputError(path_ + ": write failed: " + reason_of(errno));
    out.close();
    struct stat previous = {};  // the replacement keeps the permissions the file had
    if (target.exists && ::stat(path_.c_str(), &previous) == 0) ::chmod(temporary_.c_str(), previous.st_mode & 07777);
    const int fd = ::open(temporary_.c_str(), O_RDONLY);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int error = errno;
      if (fd >= 0) ::close(fd);
      throw OutputError(path_ + ": write failed: " + reason_of(error));
    }
    ::close(fd);
  } catch (...) {
    ::unlink(temporary_.c_str());
    unregister_temporary_file(temporary_);
    throw;
  }
}

StagedFile::~StagedFile() {
  if (committed_) return;
  ::unlink(temporary_.c_str());
  unregister_temporary_file(temporary_);
}

void StagedFile::commit() {
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) throw OutputError(path_ + ": cannot be written: " + reason_of(errno));
  committed_ = true;
  unregister_temporary_file(temporary_);
}

void write_in_place(const OutputTarget& target, const ContentWriter& write) {
  std::ostringstream content;  // complete before the first byte goes out
  write(content);
  const std::string bytes = content.str();
  // O_APPEND: a shell's `> file` behind /dev/stdout keeps what was printed before.
  const int fd = ::open(target.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw OutputError(target.path + ": cannot be written: " + reason_of(errno));
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      throw OutputError(target.path + ": write failed: " + reason_of(error));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && errno != EINTR) throw OutputError(target.path + ": write failed: " + reason_of(errno));
}

void write_file_atomically(const std::string& path, const ContentWriter& write) {
  const OutputTarget target = output_target(path);
  if (target.direct) return write_in_place(target, write);
  const SignalsHeld held;
  StagedFile staged(target, write);
  staged.commit();
}

}  // namespace simtrain
