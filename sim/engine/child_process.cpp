#include "child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replay.hpp"

namespace simtrain {

namespace {

volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int) { interrupted = 1; }

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Messages travel as one length byte pair and the text, in one write (atomic below PIPE_BUF).
void send_message(int fd, const std::string& message) {
  const size_t size = std::min<size_t>(message.size(), 512);
  char frame[514] = {static_cast<char>(size >> 8), static_cast<char>(size & 0xff)};
  std::memcpy(frame + 2, message.data(), size);
  write_all(fd, frame, size + 2);
}

void deliver_messages(std::string& pending, const ChildOptions& options) {
  while (pending.size() >= 2) {
    const size_t size = (static_cast<unsigned char>(pending[0]) << 8) | static_cast<unsigned char>(pending[1]);
    if (pending.size() < size + 2) return;
    if (options.on_message) options.on_message(pending.substr(2, size));
    pending.erase(0, size + 2);
  }
}

[[noreturn]] void run_child(const std::function<std::string(const ProgressSender&)>& produce, int result_fd,
                            int message_fd) {
  int status = 0;
  try {
    const std::string result = produce([message_fd](const std::string& m) { send_message(message_fd, m); });
    if (!write_all(result_fd, result.data(), result.size())) status = 3;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "simtrain: simulation failed: %s\n", error.what());
    status = 4;
  }
  _exit(status);  // skip static destructors shared with the parent
}

}  // namespace

std::string run_in_child(const std::function<std::string(const ProgressSender&)>& produce,
                         const ChildOptions& options) {
  int result_pipe[2], message_pipe[2];
  if (::pipe(result_pipe) != 0 || ::pipe(message_pipe) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  struct sigaction action = {}, previous = {};
  action.sa_handler = on_interrupt;  // no SA_RESTART: poll() returns on Ctrl-C
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous);
  interrupted = 0;

  std::fflush(nullptr);  // or the child would print the parent's pending output again
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    sigaction(SIGINT, &previous, nullptr);
    ::close(result_pipe[0]);
    ::close(message_pipe[0]);
    run_child(produce, result_pipe[1], message_pipe[1]);
  }
  ::close(result_pipe[1]);
  ::close(message_pipe[1]);

  std::string result, messages;
  pollfd fds[2] = {{result_pipe[0], POLLIN, 0}, {message_pipe[0], POLLIN, 0}};
  bool cancelled = false;
  char buffer[1 << 16];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    cancelled = interrupted || (options.cancel && options.cancel->load());
    if (cancelled) break;
    if (::poll(fds, 2, 100) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? result : messages).append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
      }
    }
    deliver_messages(messages, options);
  }
  for (const pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (cancelled) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &previous, nullptr);
  if (cancelled) throw Interrupted();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(WIFSIGNALED(status) ? "simulation process killed by signal " + std::to_string(WTERMSIG(status))
                                                 : "simulation process failed");
  return result;
}

}  // namespace simtrain
