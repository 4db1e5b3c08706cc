#pragma once
// The `simtrain` command line, callable in-process so tests can drive it.
#include <ostream>

namespace simtrain {

// Returns the exit code: 0 success, 2 bad input (message on `err`), 1 other
// failures, 130 interrupted.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace simtrain
