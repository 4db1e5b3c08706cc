#include "sim/scenario/run_config.hpp"

#include "sim/base/json_fields.hpp"

namespace simtrain {

std::string to_string(Component component) {
  switch (component) {
    case Component::gpu: return "gpu";
    case Component::node: return "node";
    case Component::link: return "link";
    case Component::switch_: return "switch";
  }
  return "?";
}

namespace {

ScheduledFailure parse_failure(const nlohmann::json& value, const std::string& file, const std::string& path) {
  JsonFields f(value, file, path);
  ScheduledFailure failure;
  const std::string component = *[&] {
    auto c = f.choice("component", {"gpu", "node", "link", "switch"});
    if (!c) f.fail("component", "missing (gpu, node, link or switch)");
    return c;
  }();
  failure.component = component == "gpu"    ? Component::gpu
                      : component == "node" ? Component::node
                      : component == "link" ? Component::link
                                            : Component::switch_;
  if (failure.component == Component::link) {
    failure.link = f.text("link").value_or("");
    if (failure.link.empty()) f.fail("link", "missing: the fabric link that fails (e.g. nic0.0_up)");
  } else {
    failure.index = f.integer("index", 0).value_or(0);
  }
  failure.at_seconds = f.required_number("at_hours") * 3600;
  f.reject_unknown();
  return failure;
}

}  // namespace

RunConfig parse_run_config(const nlohmann::json* reliability, const nlohmann::json* checkpoint, const std::string& file) {
  RunConfig run;
  if (reliability) {
    JsonFields f(*reliability, file, "reliability.");
    ReliabilityConfig& r = run.reliability;
    r.gpu_mtbf_hours = f.number("gpu_mtbf_hours").value_or(0);
    r.node_mtbf_hours = f.number("node_mtbf_hours").value_or(0);
    r.link_mtbf_hours = f.number("link_mtbf_hours").value_or(0);
    r.switch_mtbf_hours = f.number("switch_mtbf_hours").value_or(0);
    r.rates_stated = f.has("gpu_mtbf_hours") || f.has("node_mtbf_hours") || f.has("link_mtbf_hours") ||
                     f.has("switch_mtbf_hours");
    r.spares_stated = f.has("spare_nodes");
    r.repair_hours = f.number("repair_hours").value_or(r.repair_hours);
    r.spare_nodes = f.integer("spare_nodes", 0).value_or(0);
    r.detection_seconds = f.number("detection_seconds").value_or(r.detection_seconds);
    r.reschedule_seconds = f.number("reschedule_seconds").value_or(r.reschedule_seconds);
    r.seed = static_cast<uint64_t>(f.integer("seed", 0).value_or(1));
    if (f.has("failures")) {
      const nlohmann::json& list = f.raw("failures");
      if (!list.is_array()) f.fail("failures", "expected a list of {component, index or link, at_hours}");
      for (size_t i = 0; i < list.size(); ++i)
        r.scheduled.push_back(parse_failure(list[i], file, "reliability.failures[" + std::to_string(i) + "]."));
    }
    f.reject_unknown();
  }
  if (checkpoint) {
    JsonFields f(*checkpoint, file, "checkpoint.");
    CheckpointConfig& c = run.checkpoint;
    c.every_steps = f.integer("every_steps").value_or(0);
    c.every_minutes = f.number("every_minutes", 1e-6).value_or(0);
    if (c.every_steps && c.every_minutes) f.fail("every_minutes", "give every_steps or every_minutes, not both");
    c.storage_write_bytes_per_second =
        f.number("storage_write_GBps", 1e-6).value_or(c.storage_write_bytes_per_second / 1e9) * 1e9;
    c.storage_read_bytes_per_second =
        f.number("storage_read_GBps", 1e-6).value_or(c.storage_read_bytes_per_second / 1e9) * 1e9;
    f.reject_unknown();
  }
  return run;
}

}  // namespace simtrain
