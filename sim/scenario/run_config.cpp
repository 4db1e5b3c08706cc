#include "sim/scenario/run_config.hpp"

#include "sim/base/input_error.hpp"
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

std::string to_string(CheckpointMode mode) {
  switch (mode) {
    case CheckpointMode::sync: return "sync";
    case CheckpointMode::async: return "async";
    case CheckpointMode::in_memory: return "in_memory";
  }
  return "?";
}

std::string to_string(StorageKind kind) {
  switch (kind) {
    case StorageKind::host_memory: return "host_memory";
    case StorageKind::local_disk: return "local_disk";
    case StorageKind::shared: return "shared";
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

// One entry of checkpoint.tiers: a per-node tier into `c.node_tiers`, or the shared storage into c's storage fields.
void parse_tier(const nlohmann::json& value, const std::string& file, const std::string& path, CheckpointConfig& c) {
  JsonFields f(value, file, path);
  const auto kind = f.choice("kind", {"host_memory", "local_disk", "shared"});
  if (!kind) f.fail("kind", "missing (host_memory, local_disk or shared)");
  const double write_GBps = f.number("write_GBps", 1e-6).value_or(0), read_GBps = f.number("read_GBps", 1e-6).value_or(0);
  const double capacity_GB = f.number("capacity_GB", 1e-9).value_or(0);
  const int64_t keep = f.integer("keep").value_or(1);
  f.reject_unknown();
  if (*kind == "shared") {
    if (write_GBps > 0) c.storage_write_bytes_per_second = write_GBps * 1e9;
    if (read_GBps > 0) c.storage_read_bytes_per_second = read_GBps * 1e9;
    c.storage_capacity_bytes = capacity_GB * 1e9;
    c.storage_keep = keep;
    return;
  }
  StorageTier tier;
  tier.kind = *kind == "host_memory" ? StorageKind::host_memory : StorageKind::local_disk;
  if (tier.kind == StorageKind::local_disk && (write_GBps <= 0 || read_GBps <= 0))
    f.fail(write_GBps <= 0 ? "write_GBps" : "read_GBps", "missing: a local disk's bandwidth per node has no default");
  for (const StorageTier& other : c.node_tiers)
    if (other.kind == tier.kind) f.fail("kind", "a second " + *kind + " tier: give each kind once");
  tier.write_bytes_per_second = write_GBps * 1e9;
  tier.read_bytes_per_second = read_GBps * 1e9;
  tier.capacity_bytes = capacity_GB * 1e9;
  tier.keep = keep;
  c.node_tiers.push_back(tier);
}

void parse_checkpoint(const nlohmann::json& checkpoint, const std::string& file, CheckpointConfig& c) {
  JsonFields f(checkpoint, file, "checkpoint.");
  const std::string mode = f.choice("mode", {"sync", "async", "in_memory"}).value_or("sync");
  c.mode = mode == "async" ? CheckpointMode::async : mode == "in_memory" ? CheckpointMode::in_memory : CheckpointMode::sync;
  c.every_steps = f.integer("every_steps").value_or(0);
  c.every_minutes = f.number("every_minutes", 1e-6).value_or(0);
  if (c.every_steps && c.every_minutes) f.fail("every_minutes", "give every_steps or every_minutes, not both");
  c.storage_write_bytes_per_second =
      f.number("storage_write_GBps", 1e-6).value_or(c.storage_write_bytes_per_second / 1e9) * 1e9;
  c.storage_read_bytes_per_second =
      f.number("storage_read_GBps", 1e-6).value_or(c.storage_read_bytes_per_second / 1e9) * 1e9;
  if (f.has("tiers")) {
    const nlohmann::json& list = f.raw("tiers");
    if (!list.is_array()) f.fail("tiers", "expected a list of {kind, write_GBps, read_GBps, capacity_GB, keep}");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = "checkpoint.tiers[" + std::to_string(i) + "].";
      if (list[i].is_object() && list[i].contains("kind") && list[i]["kind"] == "shared" &&
          (f.has("storage_write_GBps") || f.has("storage_read_GBps")))
        throw InputError(file, path + "kind", "the shared storage is given twice: here and in checkpoint.storage_*_GBps");
      parse_tier(list[i], file, path, c);
    }
  }
  c.peer_replicas = f.integer("peer_replicas", 0).value_or(c.mode == CheckpointMode::in_memory ? 1 : 0);
  if (c.peer_replicas > 0 && c.mode != CheckpointMode::in_memory)
    f.fail("peer_replicas", "peer replicas are kept by mode in_memory only (this checkpoint's mode is " + mode + ")");
  c.persist_every = f.integer("persist_every").value_or(1);
  if (c.persist_every > 1 && c.mode == CheckpointMode::sync)
    f.fail("persist_every", "a sync save always reaches the shared storage: persist_every needs mode async or in_memory");
  if (f.has("incremental")) {
    JsonFields inc(f.raw("incremental"), file, "checkpoint.incremental.");
    c.incremental.full_every = inc.integer("full_every").value_or(1);
    c.incremental.changed_fraction_per_step = inc.number("changed_fraction_per_step", 1e-9).value_or(1);
    if (c.incremental.changed_fraction_per_step > 1)
      inc.fail("changed_fraction_per_step", "a fraction of the checkpoint's bytes: at most 1");
    inc.reject_unknown();
  }
  f.reject_unknown();
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
  if (checkpoint) parse_checkpoint(*checkpoint, file, run.checkpoint);
  return run;
}

}  // namespace simtrain
