#include "process_world.hpp"

#include <algorithm>
#include <cstdlib>
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
  std::map<int, std::string> by_rank;
  const std::vector<std::string> errors = world.gather_bytes(error);
  for (size_t r = 0; r < errors.size(); ++r) by_rank[static_cast<int>(r)] = errors[r];
  std::string all = grouped_by_rank(by_rank, world.size());
  world.broadcast(all, 0);
  return all;
}

std::string grouped_by_rank(const std::map<int, std::string>& by_rank, int world_size, const std::string& separator) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // message, its ranks; by lowest rank
  for (const auto& [rank, message] : by_rank) {
    if (message.empty()) continue;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == message; });
    if (group == groups.end()) group = groups.insert(groups.end(), {message, {}});
    group->second.push_back(rank);
  }
  std::string text;
  for (const auto& [message, ranks] : groups) {
    std::string label = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) label += (i ? ", " : "") + std::to_string(ranks[i]);
    if (world_size > 1 && static_cast<int>(ranks.size()) == world_size) label = "every rank";
    text += (text.empty() ? "" : separator) + label + ": " + message;
  }
  return text;
}

int rank_from_environment(std::initializer_list<const char*> variables) {
  for (const char* name : variables)
    if (const char* value = std::getenv(name)) {
      char* end = nullptr;
      const long rank = std::strtol(value, &end, 10);
      if (end != value && *end == '\0' && rank >= 0) return static_cast<int>(rank);
    }
  return 0;
}

int launcher_rank() { return rank_from_environment({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}); }

}  // namespace simtrain
