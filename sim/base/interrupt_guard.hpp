#pragma once
// Ctrl-C (or SIGTERM, SIGHUP) at any moment of a command: the process stops
// at once with exit code 128 + the signal's number, having removed the
// temporary files of outputs not yet in place, and says whether its outputs
// were written. Outputs are renamed into place with these signals held
// back, so each is either as it was or complete.
#include <signal.h>

#include <string>

namespace simtrain {

// Installs the handler for its lifetime (one at a time).
class InterruptGuard {
public:
  InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  ~InterruptGuard();
};

// A temporary file the handler removes; used by StagedFile.
void register_temporary_file(const std::string& path);
void unregister_temporary_file(const std::string& path);
// What an interruption from now on says was written.
enum class OutputsWritten { none, files, all };
void mark_outputs_written(OutputsWritten written);

// Holds back Ctrl-C and termination signals (in this thread) for its lifetime.
class SignalsHeld {
public:
  SignalsHeld();
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;
  ~SignalsHeld();

private:
  sigset_t previous_;
};

}  // namespace simtrain
