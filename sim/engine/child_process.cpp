#include "child_process.hpp"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

#include "replay.hpp"

namespace simtrain {

namespace {

volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int) { interrupted = 1; }

void write_all(int fd, const std::string& data) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n <= 0) _exit(3);
    written += static_cast<size_t>(n);
  }
}

}  // namespace

std::string run_in_child(const std::function<std::string()>& produce) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  struct sigaction action = {}, previous = {};
  action.sa_handler = on_interrupt;  // no SA_RESTART: read() returns on Ctrl-C
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous);
  interrupted = 0;

  std::fflush(nullptr);  // or the child would print the parent's pending output again
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    sigaction(SIGINT, &previous, nullptr);
    ::close(fds[0]);
    int status = 0;
    try {
      write_all(fds[1], produce());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "simtrain: simulation failed: %s\n", error.what());
      status = 4;
    }
    ::close(fds[1]);
    _exit(status);  // skip static destructors shared with the parent
  }
  ::close(fds[1]);
  std::string result;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      result.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR || interrupted) {
      break;
    }
  }
  ::close(fds[0]);
  if (interrupted) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &previous, nullptr);
  if (interrupted) throw Interrupted();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(WIFSIGNALED(status) ? "simulation process killed by signal " + std::to_string(WTERMSIG(status))
                                                 : "simulation process failed");
  return result;
}

}  // namespace simtrain
