#pragma once
// Runs a function in a forked child and returns the bytes it produced. Used
// to give each simulation a fresh SimGrid, and to run several at once
// (forking from one thread: a process with other threads running cannot fork
// safely, its allocator's locks may be held). The child can send small progress
// messages while it works; Ctrl-C or a cancel flag stops it.
#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace simtrain {

// Ctrl-C, SIGTERM or a cancel flag stopped the work.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

using ProgressSender = std::function<void(const std::string& message)>;

struct ChildOptions {
  // Called in the parent for each message the child sent (at most 512 bytes each).
  std::function<void(const std::string& message)> on_message;
  const std::atomic<bool>* cancel = nullptr;  // polled about ten times a second
};

// `produce` runs in the child; its result comes back through a pipe. Throws
// std::runtime_error if the child fails, Interrupted on SIGINT or cancel (the
// child is killed).
std::string run_in_child(const std::function<std::string(const ProgressSender& send)>& produce,
                         const ChildOptions& options = {});

// produce(0), ..., produce(count - 1), each in a child forked from this
// thread, `at_once` at a time; results in order. `on_done(i)` is called in
// the parent as each child finishes. Throws as run_in_child does (the other
// children are killed).
std::vector<std::string> run_in_children(size_t count, int at_once, const std::function<std::string(size_t)>& produce,
                                         const std::function<void(size_t)>& on_done, const ChildOptions& options = {});

}  // namespace simtrain
