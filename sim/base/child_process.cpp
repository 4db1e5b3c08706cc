#include "sim/base/child_process.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>


namespace simtrain {

namespace {

// Why a child that no one here killed died of a signal: a SIGKILL from
// outside is, on Linux, most likely the out-of-memory killer.
std::string killed_by(int signal) {
  std::string reason = "simulation process killed by signal " + std::to_string(signal);
  if (signal == SIGKILL) reason += " (most likely out of memory: simulate fewer GPUs or micro-batches)";
  return reason;
}

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

// Ctrl-C sets `interrupted` while the parent waits (no SA_RESTART: poll()
// returns); children get the handler the parent had before.
class InterruptHandler {
public:
  InterruptHandler() {
    struct sigaction action = {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
    interrupted = 0;
  }
  ~InterruptHandler() { sigaction(SIGINT, &previous_, nullptr); }
  const struct sigaction& previous() const { return previous_; }

private:
  struct sigaction previous_ = {};
};

// A forked child and what it has written so far.
struct Child {
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // read ends: its result, its messages
  std::string result, messages;
  bool running() const { return fds[0] >= 0 || fds[1] >= 0; }
};

Child start_child(const std::function<std::string(const ProgressSender&)>& produce, const InterruptHandler& handler) {
  int result_pipe[2], message_pipe[2];
  if (::pipe(result_pipe) != 0 || ::pipe(message_pipe) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);  // or the child would print the parent's pending output again
  Child child;
  child.pid = ::fork();
  if (child.pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child.pid == 0) {
    sigaction(SIGINT, &handler.previous(), nullptr);
    ::close(result_pipe[0]);
    ::close(message_pipe[0]);
    run_child(produce, result_pipe[1], message_pipe[1]);
  }
  ::close(result_pipe[1]);
  ::close(message_pipe[1]);
  child.fds[0] = result_pipe[0];
  child.fds[1] = message_pipe[0];
  return child;
}

// Reads what the children wrote, waiting at most 100 ms; false once cancelled.
bool read_children(const std::vector<Child*>& children, const ChildOptions& options) {
  if (interrupted || (options.cancel && options.cancel->load())) return false;
  std::vector<pollfd> fds;
  for (const Child* c : children)
    for (int fd : c->fds) fds.push_back({fd, POLLIN, 0});  // poll skips fds of -1
  if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR)
    throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  char buffer[1 << 16];
  for (size_t i = 0; i < fds.size(); ++i) {
    Child& c = *children[i / 2];
    int& fd = c.fds[i % 2];
    if (fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      (i % 2 == 0 ? c.result : c.messages).append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(fd);
      fd = -1;
    }
  }
  for (Child* c : children) deliver_messages(c->messages, options);
  return true;
}

// Reaps the child (killed first if asked) and returns its result; throws if it failed.
std::string finish_child(Child& child, bool kill) {
  for (int& fd : child.fds)
    if (fd >= 0) ::close(fd), fd = -1;
  if (kill) ::kill(child.pid, SIGKILL);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!kill && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
    throw std::runtime_error(WIFSIGNALED(status) ? killed_by(WTERMSIG(status)) : "simulation process failed");
  return std::move(child.result);
}

}  // namespace

std::string run_in_child(const std::function<std::string(const ProgressSender&)>& produce,
                         const ChildOptions& options) {
  const InterruptHandler handler;
  Child child = start_child(produce, handler);
  bool cancelled = false;
  while (child.running() && !cancelled) cancelled = !read_children({&child}, options);
  std::string result = finish_child(child, cancelled);
  if (cancelled) throw Interrupted();
  return result;
}

std::vector<std::string> run_in_children(size_t count, int at_once, const std::function<std::string(size_t)>& produce,
                                         const std::function<void(size_t)>& on_done, const ChildOptions& options) {
  const InterruptHandler handler;
  std::vector<std::string> results(count);
  std::vector<std::pair<size_t, Child>> running;  // item, child
  auto kill_running = [&] {
    for (auto& [item, child] : running) finish_child(child, true);
    running.clear();
  };
  try {
    for (size_t next = 0; next < count || !running.empty();) {
      for (; next < count && static_cast<int>(running.size()) < std::max(at_once, 1); ++next)
        running.emplace_back(next, start_child([&produce, next](const ProgressSender&) { return produce(next); }, handler));
      std::vector<Child*> children;
      for (auto& [item, child] : running) children.push_back(&child);
      if (!read_children(children, options)) throw Interrupted();
      for (auto it = running.begin(); it != running.end();) {
        if (it->second.running()) {
          ++it;
          continue;
        }
        results[it->first] = finish_child(it->second, false);
        if (on_done) on_done(it->first);
        it = running.erase(it);
      }
    }
  } catch (...) {
    kill_running();
    throw;
  }
  return results;
}

}  // namespace simtrain
