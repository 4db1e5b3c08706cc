#include "sim/program/task.hpp"

namespace simtrain {

std::string to_string(CommDim dim) {
  static const char* names[] = {"none", "tp", "pp", "dp", "ep", "cp"};
  return names[static_cast<int>(dim)];
}

std::string to_string(Stream stream) {
  static const char* names[] = {"compute", "p2p", "dp", "dp_gather", "tp_overlap"};
  return names[static_cast<int>(stream)];
}

}  // namespace simtrain
