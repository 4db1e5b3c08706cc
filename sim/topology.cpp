#include "topology.hpp"

#include <filesystem>

#include "embedded_files.hpp"
#include "input_error.hpp"
#include "json_fields.hpp"

namespace simtrain {

namespace {

Topology parse_topology(const nlohmann::json& document, const std::string& file, const std::string& path) {
  JsonFields fields(document, file, path);
  Topology t;
  t.name = fields.text("name").value_or("custom");
  fields.text("description");
  t.gpus_per_node = fields.required_integer("gpus_per_node");
  t.nvlink_bytes_per_second = fields.required_number("nvlink_GBps", 1e-6) * 1e9;
  t.nvlink_latency_seconds = fields.number("nvlink_latency_us").value_or(0) * 1e-6;
  t.nics_per_node = fields.required_integer("nics_per_node");
  t.nic_bytes_per_second = fields.required_number("nic_Gbps", 1e-6) * 1e9 / 8;
  t.nic_latency_seconds = fields.number("nic_latency_us").value_or(0) * 1e-6;
  t.rail_optimized = fields.boolean("rail_optimized").value_or(true);
  t.nodes_per_unit = fields.required_integer("nodes_per_unit");
  t.units_per_pod = fields.required_integer("units_per_pod");
  t.leaf_oversubscription = fields.number("leaf_oversubscription", 1).value_or(1);
  t.spine_oversubscription = fields.number("spine_oversubscription", 1).value_or(1);
  t.switch_latency_seconds = fields.number("switch_latency_us").value_or(0) * 1e-6;
  t.nvlink_efficiency = fields.number("nvlink_efficiency", 1e-3).value_or(1);
  t.network_efficiency = fields.number("network_efficiency", 1e-3).value_or(1);
  if (t.nvlink_efficiency > 1) fields.fail("nvlink_efficiency", "must be at most 1");
  if (t.network_efficiency > 1) fields.fail("network_efficiency", "must be at most 1");
  if (t.nics_per_node > t.gpus_per_node || t.gpus_per_node % t.nics_per_node != 0)
    fields.fail("nics_per_node", "must divide gpus_per_node (" + std::to_string(t.gpus_per_node) + ")");
  fields.reject_unknown();
  return t;
}

}  // namespace

std::vector<std::string> builtin_topology_names() {
  std::vector<std::string> names;
  for (const EmbeddedFile& f : embedded_topologies()) names.emplace_back(f.name);
  return names;
}

Topology topology_from_json(const nlohmann::json& value, const std::string& file, const std::string& field,
                            const std::string& base_dir) {
  if (value.is_object()) return parse_topology(value, file, field + ".");
  if (!value.is_string()) throw InputError(file, field, "expected a topology name, a path or an object");
  const std::string name = value.get<std::string>();
  for (const EmbeddedFile& f : embedded_topologies())
    if (f.name == name) return parse_topology(nlohmann::json::parse(f.text), "topologies/" + name + ".json", "");
  std::filesystem::path path(name);
  if (path.is_relative()) path = std::filesystem::path(base_dir) / path;
  if (std::filesystem::exists(path)) return parse_topology(read_json_file(path.string()), path.string(), "");
  if (path.extension() == ".json") throw InputError(file, field, "no such file: " + path.string());
  std::string names;
  for (const std::string& n : builtin_topology_names()) names += (names.empty() ? "" : ", ") + n;
  throw InputError(file, field, "unknown topology '" + name + "' (built in: " + names + "; or give a .json path)");
}

}  // namespace simtrain
