#pragma once
// Writes an output file so that it is either complete or not there: the
// content goes to a temporary file beside it, which is synced and renamed.
#include <functional>
#include <ostream>
#include <string>

namespace simtrain {

// Throws InputError naming the path if it cannot be written.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace simtrain
