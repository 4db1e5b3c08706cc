#include "sim/base/interrupt_guard.hpp"

#include <unistd.h>

#include <array>
#include <climits>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace simtrain {

namespace {

constexpr int handled_signals[] = {SIGINT, SIGTERM, SIGHUP};

// The handler may only call async-signal-safe functions: the registry is
// fixed-size memory, each slot published by its flag after its path is copied.
struct TemporarySlot {
  char path[PATH_MAX];
  volatile sig_atomic_t used;
};
std::array<TemporarySlot, 16> temporaries;
volatile sig_atomic_t outputs_written = 0;
std::mutex registry_mutex;  // between threads; the handler reads without it
pid_t guarded_process = 0;  // forked children stop silently: their parent speaks

void write_message(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void stop_at_once(int signal) {
  for (TemporarySlot& slot : temporaries)
    if (slot.used) ::unlink(slot.path);
  if (::getpid() == guarded_process)
    write_message(outputs_written == 0   ? "\nsimtrain: interrupted; no output was written\n"
                : outputs_written == 1 ? "\nsimtrain: interrupted; the output files were written completely, "
                                         "what goes to standard output, a device or a FIFO may be cut short\n"
                                       : "\nsimtrain: interrupted; the outputs were written completely\n");
  ::_exit(128 + signal);
}

struct sigaction previous_actions[std::size(handled_signals)];

}  // namespace

InterruptGuard::InterruptGuard() {
  outputs_written = 0;
  guarded_process = ::getpid();
  struct sigaction action = {};
  action.sa_handler = stop_at_once;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(handled_signals); ++i) sigaction(handled_signals[i], &action, &previous_actions[i]);
}

InterruptGuard::~InterruptGuard() {
  for (size_t i = 0; i < std::size(handled_signals); ++i) sigaction(handled_signals[i], &previous_actions[i], nullptr);
}

void register_temporary_file(const std::string& path) {
  if (path.size() >= PATH_MAX) throw std::length_error("temporary file name too long: " + path);
  const std::lock_guard lock(registry_mutex);
  for (TemporarySlot& slot : temporaries) {
    if (slot.used) continue;
    std::memcpy(slot.path, path.c_str(), path.size() + 1);
    slot.used = 1;
    return;
  }
  throw std::length_error("more than 16 outputs written at once");
}

void unregister_temporary_file(const std::string& path) {
  const std::lock_guard lock(registry_mutex);
  for (TemporarySlot& slot : temporaries)
    if (slot.used && path == slot.path) slot.used = 0;
}

void mark_outputs_written(OutputsWritten written) { outputs_written = static_cast<sig_atomic_t>(written); }

SignalsHeld::SignalsHeld() {
  sigset_t held;
  sigemptyset(&held);
  for (int signal : handled_signals) sigaddset(&held, signal);
  pthread_sigmask(SIG_BLOCK, &held, &previous_);
}

SignalsHeld::~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace simtrain
