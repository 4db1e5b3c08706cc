#include "platform_command.hpp"

#include <stdexcept>

#include "sim/base/input_error.hpp"
#include "sim/base/option_checks.hpp"
#include "sim/base/output_files.hpp"
#include "sim/engine/platform_file.hpp"
#include "sim/network/fabric.hpp"
#include "sim/network/platform_export.hpp"

namespace simtrain {

PlatformCommand::PlatformCommand(CLI::App& app) {
  command_ = app.add_subcommand("export-platform",
                                "write a topology as a SimGrid platform XML file (hosts = GPUs in rank order, "
                                "explicit routes), to use as cluster.topology or to edit");
  command_->add_option("--topology", topology_, "built-in topology name or topology JSON path")->required();
  command_->add_option("--num-gpus", num_gpus_, "GPUs (hosts) the platform holds")
      ->required()
      ->check(between(2, max_platform_gpus));
  command_->add_option("out", out_path_, "the platform file to write, e.g. my-cluster.xml; - for standard output")
      ->required();
  force_.add_to(*command_);
}

void PlatformCommand::run(std::ostream& out) const {
  OutputFiles outputs(out, force_.existing_files());
  outputs.add("OUT", out_path_);
  const Topology topology = with_platform_routes(topology_from_json(topology_, "--topology", "", "."), num_gpus_);
  outputs.refuse_inputs({topology.file, topology.platform_file});
  const Fabric fabric = [&] {
    try {
      return Fabric(topology, num_gpus_);
    } catch (const std::invalid_argument& e) {
      throw InputError("--num-gpus", "", e.what());
    }
  }();
  const std::string origin = topology.name + ", " + std::to_string(num_gpus_) + " GPUs";
  outputs.write({{"OUT", [&](std::ostream& o) { write_platform_xml(o, fabric, origin); }}});
  if (outputs.writes_standard_output()) return;
  out << "wrote " << out_path_ << ": " << num_gpus_ << " hosts from " << origin << "\n"
      << "use it as: \"topology\": {\"kind\": \"simgrid_platform\", \"platform_file\": \"" << out_path_
      << "\", \"gpus_per_node\": " << topology.gpus_per_node << "}\n";
}

}  // namespace simtrain
