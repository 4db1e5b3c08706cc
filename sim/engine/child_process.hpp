#pragma once
// Runs a function in a forked child and returns the bytes it produced. Used
// to give each simulation a fresh SimGrid; Ctrl-C stops the child and throws.
#include <functional>
#include <string>

namespace simtrain {

// `produce` runs in the child; its result is sent back through a pipe. If the
// child dies, throws std::runtime_error; on SIGINT, kills it and throws Interrupted.
std::string run_in_child(const std::function<std::string()>& produce);

}  // namespace simtrain
