#pragma once
// Runs a function in a forked child and returns the bytes it produced. Used
// to give each simulation a fresh SimGrid. The child can send small progress
// messages while it works; Ctrl-C or a cancel flag stops it.
#include <atomic>
#include <functional>
#include <string>

namespace simtrain {

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

}  // namespace simtrain
