#include "sim/scenario/fabric_match.hpp"

#include <algorithm>

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {
bool built_for(const Topology& topology, const std::string& gpu) {
  return std::find(topology.built_for.begin(), topology.built_for.end(), gpu) != topology.built_for.end();
}
}  // namespace

std::optional<std::string> builtin_topology_for(const std::string& gpu, const Topology& like) {
  std::optional<std::string> any_kind;
  for (const std::string& name : builtin_topology_names()) {
    const Topology topology = topology_from_json(name, "", "", ".");
    if (!built_for(topology, gpu)) continue;
    if (topology.kind == like.kind) return name;
    if (!any_kind) any_kind = name;
  }
  return any_kind;
}

std::string fabric_mismatch(const std::string& gpu, const Topology& topology) {
  if (topology.built_for.empty() || built_for(topology, gpu)) return "";
  std::string gpus;
  for (const std::string& g : topology.built_for) gpus += (gpus.empty() ? "" : ", ") + g;
  std::string text = "GPU " + gpu + " on topology " + topology.name + " built for " + gpus +
                     ": NVLink figures of the topology kept (" +
                     format("%g GB/s per GPU per direction)", topology.nvlink_bytes_per_second / 1e9);
  if (const std::optional<std::string> match = builtin_topology_for(gpu, topology))
    text += "; the built-in system for " + gpu + " is " + *match + " (--set cluster.topology=" + *match +
            "; search --fabric-follows-gpu switches to it)";
  return text;
}

}  // namespace simtrain
