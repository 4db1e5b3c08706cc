#include "atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "input_error.hpp"

namespace simtrain {

namespace {

// Holds back Ctrl-C and termination signals (in this thread) for its lifetime:
// delivered while writing, they would end the process and leave the temporary file.
class SignalsHeld {
public:
  SignalsHeld() {
    sigset_t held;
    sigemptyset(&held);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&held, signal);
    pthread_sigmask(SIG_BLOCK, &held, &previous_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

private:
  sigset_t previous_;
};

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const SignalsHeld held;
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", std::string("cannot be written: ") + std::strerror(errno));
    try {
      write(out);
    } catch (...) {
      out.close();
      std::filesystem::remove(temporary);
      throw;
    }
    out.flush();
    if (!out) {
      std::filesystem::remove(temporary);
      throw InputError(path, "", "write failed (disk full?)");
    }
  }
  const int fd = ::open(temporary.c_str(), O_RDONLY);
  if (fd >= 0) ::fsync(fd), ::close(fd);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::filesystem::remove(temporary);
    throw InputError(path, "", "cannot be written: " + reason);
  }
}

}  // namespace simtrain
