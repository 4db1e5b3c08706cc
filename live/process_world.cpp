#include "process_world.hpp"

#include <cstring>

namespace simtrain {

std::vector<std::vector<double>> ProcessWorld::gather(const std::vector<double>& values) {
  const std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
  std::vector<std::vector<double>> result;
  for (const std::string& rank_bytes : gather_bytes(bytes)) {
    std::vector<double>& rank_values = result.emplace_back(rank_bytes.size() / sizeof(double));
    std::memcpy(rank_values.data(), rank_bytes.data(), rank_values.size() * sizeof(double));
  }
  return result;
}

std::string agree_on_errors(ProcessWorld& world, const std::string& error) {
  std::string all;
  const std::vector<std::string> errors = world.gather_bytes(error);
  for (size_t r = 0; r < errors.size(); ++r)
    if (!errors[r].empty()) all += (all.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " + errors[r];
  world.broadcast(all, 0);
  return all;
}

}  // namespace simtrain
