#pragma once
// `simtrain --version`: "simtrain 0.1.0 (git ce5a6dc)", CMake's project
// version and, where the source was a git checkout, `git describe` as it was
// when the build was configured (fixed then: building again gives the same binary).
#include <string>

namespace simtrain {

std::string version_text();

}  // namespace simtrain
