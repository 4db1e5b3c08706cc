#include "sim/scenario/topology.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "sim/base/embedded_files.hpp"
#include "sim/base/input_error.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/base/text_format.hpp"

namespace simtrain {

namespace {

// Links grow with torus positions and with the square of groups and routers
// per group: bounds that stop a typo from exhausting memory.
constexpr int64_t max_torus_positions = 1 << 20;
constexpr int64_t max_dragonfly_groups = 1024;
constexpr int64_t max_routers_per_group = 256;

const std::vector<std::string> kind_names = {"fat_tree", "torus", "dragonfly", "simgrid_platform"};
const std::vector<TopologyKind> built_kinds = {TopologyKind::fat_tree, TopologyKind::torus, TopologyKind::dragonfly};

// Fields that only some kinds read: named as such when another kind has one.
const std::vector<std::pair<std::vector<std::string>, std::vector<TopologyKind>>> kind_fields = {
    {{"nics_per_node", "nic_Gbps", "nic_latency_us"}, {TopologyKind::fat_tree, TopologyKind::dragonfly}},
    {{"rail_optimized", "nodes_per_unit", "units_per_pod", "leaf_oversubscription", "spine_oversubscription",
      "switch_latency_us"},
     {TopologyKind::fat_tree}},
    {{"torus_dims", "torus_link_GBps", "torus_link_latency_us"}, {TopologyKind::torus}},
    {{"dragonfly_groups", "routers_per_group", "nodes_per_router", "local_link_GBps", "local_link_latency_us",
      "global_link_GBps", "global_link_latency_us"},
     {TopologyKind::dragonfly}},
    {{"nvlink_GBps", "nvlink_latency_us", "nvlink_efficiency"}, built_kinds},
    {{"platform_file"}, {TopologyKind::simgrid_platform}}};

void reject_other_kinds_fields(const JsonFields& fields, TopologyKind kind) {
  for (const auto& [keys, kinds] : kind_fields) {
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) continue;
    std::string owners;
    for (TopologyKind owner : kinds) owners += (owners.empty() ? "" : " or ") + to_string(owner);
    for (const std::string& key : keys)
      if (fields.has(key)) fields.fail(key, "applies to kind " + owners + ", not to " + to_string(kind));
  }
}

int bounded_integer(JsonFields& fields, const std::string& key, int64_t max_value) {
  const int64_t value = fields.required_integer(key);
  if (value > max_value)
    fields.fail(key, "must be at most " + number_text(double(max_value)) + ", got " + std::to_string(value));
  return static_cast<int>(value);
}

double seconds_from_us(JsonFields& fields, const std::string& key) { return fields.number(key).value_or(0) * 1e-6; }

void parse_nics(JsonFields& fields, Topology& t) {
  t.nics_per_node = fields.required_integer("nics_per_node");
  t.nic_bytes_per_second = fields.required_number("nic_Gbps", 1e-6) * 1e9 / 8;
  t.nic_latency_seconds = seconds_from_us(fields, "nic_latency_us");
  if (t.nics_per_node > t.gpus_per_node || t.gpus_per_node % t.nics_per_node != 0)
    fields.fail("nics_per_node", "must divide gpus_per_node (" + std::to_string(t.gpus_per_node) + ")");
}

void parse_fat_tree(JsonFields& fields, Topology& t) {
  parse_nics(fields, t);
  t.rail_optimized = fields.boolean("rail_optimized").value_or(true);
  t.nodes_per_unit = fields.required_integer("nodes_per_unit");
  t.units_per_pod = fields.required_integer("units_per_pod");
  t.leaf_oversubscription = fields.number("leaf_oversubscription", 1).value_or(1);
  t.spine_oversubscription = fields.number("spine_oversubscription", 1).value_or(1);
  t.switch_latency_seconds = seconds_from_us(fields, "switch_latency_us");
}

std::vector<int> parse_torus_dims(JsonFields& fields) {
  const nlohmann::json& value = fields.raw("torus_dims");
  const std::string expected = "expected 1 to 3 sizes of at least 1, e.g. [4, 4, 4], got " + value.dump();
  if (!value.is_array() || value.empty() || value.size() > 3) fields.fail("torus_dims", expected);
  std::vector<int> dims;
  int64_t positions = 1;
  for (const nlohmann::json& size : value) {
    if (!size.is_number_integer() || size.get<int64_t>() < 1) fields.fail("torus_dims", expected);
    if (size.get<int64_t>() > max_torus_positions / positions)
      fields.fail("torus_dims", "must make at most " + number_text(double(max_torus_positions)) + " positions, got " +
                                    value.dump());
    positions *= size.get<int64_t>();
    dims.push_back(size.get<int>());
  }
  return dims;
}

std::vector<std::string> parse_built_for(JsonFields& fields) {
  const nlohmann::json& value = fields.raw("built_for");
  std::vector<std::string> gpus;
  for (const nlohmann::json& gpu : value.is_array() ? value : nlohmann::json::array()) {
    if (!gpu.is_string()) break;
    gpus.push_back(gpu.get<std::string>());
  }
  if (gpus.empty() || gpus.size() != value.size())
    fields.fail("built_for", "expected a list of GPU names, e.g. [\"H100-SXM\"], got " + value.dump());
  return gpus;
}

void parse_torus(JsonFields& fields, Topology& t) {
  t.torus_dims = parse_torus_dims(fields);
  t.torus_link_bytes_per_second = fields.required_number("torus_link_GBps", 1e-6) * 1e9;
  t.torus_link_latency_seconds = seconds_from_us(fields, "torus_link_latency_us");
}

void parse_dragonfly(JsonFields& fields, Topology& t) {
  parse_nics(fields, t);
  t.dragonfly_groups = bounded_integer(fields, "dragonfly_groups", max_dragonfly_groups);
  t.routers_per_group = bounded_integer(fields, "routers_per_group", max_routers_per_group);
  t.nodes_per_router = fields.required_integer("nodes_per_router");
  t.local_link_bytes_per_second = fields.required_number("local_link_GBps", 1e-6) * 1e9;
  t.local_link_latency_seconds = seconds_from_us(fields, "local_link_latency_us");
  t.global_link_bytes_per_second = fields.required_number("global_link_GBps", 1e-6) * 1e9;
  t.global_link_latency_seconds = seconds_from_us(fields, "global_link_latency_us");
}

// Every link comes from the file, at network_efficiency of its bandwidth; a
// node is one host unless gpus_per_node says otherwise.
void parse_platform(JsonFields& fields, Topology& t, const std::string& dir) {
  t.gpus_per_node = fields.integer("gpus_per_node").value_or(1);
  t.network_efficiency = fields.number("network_efficiency", 1e-3).value_or(1);
  if (t.network_efficiency > 1) fields.fail("network_efficiency", "must be at most 1");
  const std::optional<std::string> file = fields.text("platform_file");
  if (!file) fields.fail("platform_file", "required: the SimGrid platform XML, e.g. \"cluster.xml\"");
  t.platform_file = (std::filesystem::path(dir) / *file).string();  // an absolute path stays as it is
  if (!std::filesystem::is_regular_file(t.platform_file)) fields.fail("platform_file", "no such file: " + t.platform_file);
}

// `dir`: what a relative platform_file is relative to.
Topology parse_topology(const nlohmann::json& document, const std::string& file, const std::string& path,
                        const std::string& dir) {
  JsonFields fields(document, file, path);
  Topology t;
  t.name = fields.text("name").value_or("custom");
  fields.text("description");
  if (fields.has("built_for")) t.built_for = parse_built_for(fields);
  const std::string kind = fields.choice("kind", kind_names).value_or("fat_tree");
  t.kind = static_cast<TopologyKind>(std::find(kind_names.begin(), kind_names.end(), kind) - kind_names.begin());
  if (t.kind == TopologyKind::simgrid_platform) {
    parse_platform(fields, t, dir);
    reject_other_kinds_fields(fields, t.kind);
    fields.reject_unknown();
    return t;
  }
  t.gpus_per_node = fields.required_integer("gpus_per_node");
  t.nvlink_bytes_per_second = fields.required_number("nvlink_GBps", 1e-6) * 1e9;
  t.nvlink_latency_seconds = seconds_from_us(fields, "nvlink_latency_us");
  t.nvlink_efficiency = fields.number("nvlink_efficiency", 1e-3).value_or(1);
  t.network_efficiency = fields.number("network_efficiency", 1e-3).value_or(1);
  if (t.nvlink_efficiency > 1) fields.fail("nvlink_efficiency", "must be at most 1");
  if (t.network_efficiency > 1) fields.fail("network_efficiency", "must be at most 1");
  switch (t.kind) {
    case TopologyKind::fat_tree: parse_fat_tree(fields, t); break;
    case TopologyKind::torus: parse_torus(fields, t); break;
    case TopologyKind::dragonfly: parse_dragonfly(fields, t); break;
    case TopologyKind::simgrid_platform: break;  // returned above
  }
  reject_other_kinds_fields(fields, t.kind);
  fields.reject_unknown();
  return t;
}

// A platform file named as the topology stands for this object (its path
// absolute: --set may inline it in a scenario elsewhere).
nlohmann::json platform_document(const std::filesystem::path& path) {
  return {{"name", path.stem().string()},
          {"kind", "simgrid_platform"},
          {"platform_file", std::filesystem::absolute(path).lexically_normal().string()}};
}

}  // namespace

std::vector<std::string> simgrid_platform_notes() {
  return {"routes are SimGrid's, one path per pair of hosts (no ECMP or adaptive routing)",
          "no bundled links: each SimGrid link is one cable (physical_links = 1), so a link fails whole",
          "host speeds are ignored: compute times come from the GPU's cost model",
          "parameter servers and checkpoint writes (train) need a JSON topology"};
}

std::string to_string(TopologyKind kind) { return kind_names[static_cast<size_t>(kind)]; }

int Topology::max_gpus() const {
  double nodes = 0;  // a double: the product may pass an int's range
  switch (kind) {
    case TopologyKind::fat_tree:
    case TopologyKind::simgrid_platform: return 0;
    case TopologyKind::torus:
      nodes = 1;
      for (int size : torus_dims) nodes *= size;
      break;
    case TopologyKind::dragonfly: nodes = double(dragonfly_groups) * routers_per_group * nodes_per_router; break;
  }
  return static_cast<int>(std::min<double>(nodes * gpus_per_node, std::numeric_limits<int>::max()));
}

std::vector<std::string> builtin_topology_names() {
  std::vector<std::string> names;
  for (const EmbeddedFile& f : embedded_topologies()) names.emplace_back(f.name);
  return names;
}

nlohmann::json topology_document(const std::string& name, const std::string& file, const std::string& field,
                                 const std::string& base_dir, std::string& path_read) {
  for (const EmbeddedFile& f : embedded_topologies())
    if (f.name == name) return nlohmann::json::parse(f.text);
  std::filesystem::path path(name);
  if (path.is_relative()) path = std::filesystem::path(base_dir) / path;
  if (std::filesystem::exists(path)) {
    path_read = path.string();
    return path.extension() == ".xml" ? platform_document(path) : read_json_file(path_read);
  }
  if (path.extension() == ".json" || path.extension() == ".xml")
    throw InputError(file, field, "no such file: " + path.string());
  std::string names;
  for (const std::string& n : builtin_topology_names()) names += (names.empty() ? "" : ", ") + n;
  throw InputError(file, field,
                   "unknown topology '" + name + "' (built in: " + names + "; or give a .json or SimGrid .xml path)");
}

Topology topology_from_json(const nlohmann::json& value, const std::string& file, const std::string& field,
                            const std::string& base_dir) {
  if (value.is_object()) return parse_topology(value, file, field + ".", base_dir);
  if (!value.is_string()) throw InputError(file, field, "expected a topology name, a path or an object");
  const std::string name = value.get<std::string>();
  std::string path_read;
  const nlohmann::json document = topology_document(name, file, field, base_dir, path_read);
  if (path_read.empty()) return parse_topology(document, "topologies/" + name + ".json", "", base_dir);
  Topology topology = parse_topology(document, path_read, "", std::filesystem::path(path_read).parent_path().string());
  topology.file = path_read;
  return topology;
}

}  // namespace simtrain
