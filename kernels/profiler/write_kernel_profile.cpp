#include <filesystem>

#include "atomic_file.hpp"
#include "profiler.hpp"

namespace simtrain {

void write_kernel_profile(const Scenario& scenario, const std::string& path, const ProfileOptions& options) {
  const nlohmann::json document = profile_kernels(scenario, options);
  const std::filesystem::path directory = std::filesystem::path(path).parent_path();
  if (!directory.empty()) std::filesystem::create_directories(directory);
  write_file_atomically(path, [&](std::ostream& out) { out << document.dump(1) << "\n"; });
}

}  // namespace simtrain
