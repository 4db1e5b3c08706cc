#include <iostream>

#include "sim/base/output_files.hpp"
#include "profiler.hpp"

namespace simtrain {

void write_kernel_profile(const std::vector<Scenario>& scenarios, const std::string& path, const ProfileOptions& options) {
  OutputFiles output(std::cout, options.existing_files);
  output.add("--out", path);
  for (const Scenario& scenario : scenarios) output.refuse_inputs(scenario.files_read);
  const nlohmann::json document = profile_kernels(scenarios, options);
  output.write({{"--out", [&](std::ostream& out) { out << document.dump(1) << "\n"; }}});
}

}  // namespace simtrain
