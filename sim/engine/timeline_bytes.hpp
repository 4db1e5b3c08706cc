#pragma once
// A Timeline as bytes, exact doubles included: how a replay's result comes
// back from the child process that simulated it.
#include <string>

#include "sim/program/timeline.hpp"

namespace simtrain {

std::string timeline_to_bytes(const Timeline& timeline);
// The timeline of a Program with `task_count` tasks (live is never sent).
// Throws std::runtime_error for bytes that end too soon or go on too long.
Timeline timeline_from_bytes(const std::string& bytes, size_t task_count);

}  // namespace simtrain
