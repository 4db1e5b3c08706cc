#include "sim/longrun/failure_sources.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "sim/base/input_error.hpp"
#include "sim/base/text_format.hpp"
#include "sim/engine/platform_file.hpp"
#include "sim/network/fabric.hpp"

namespace simtrain {

namespace {

constexpr double hour = 3600;

// Physical links of the fabric, by what their failure does. Fabric links come
// in up/down pairs standing for one duplex cable or bundle.
struct LinkCounts {
  double stopping = 0, redundant = 0, leaf_switches = 0;
  int representative_redundant = -1;
};

LinkCounts count_links(const Fabric& fabric) {
  LinkCounts c;
  for (size_t i = 0; i < fabric.links().size(); ++i) {
    const int link = static_cast<int>(i);
    const double cables = fabric.physical_links(link) / 2.0;
    if (fabric.has_redundancy(link)) {
      c.redundant += cables;
      if (c.representative_redundant < 0) c.representative_redundant = link;
    } else {
      c.stopping += cables;
    }
    const std::string& name = fabric.links()[i].name;
    if (name.rfind("leaf", 0) == 0 && name.size() > 3 && name.compare(name.size() - 3, 3, "_up") == 0) c.leaf_switches += 1;
  }
  return c;
}

double rate(double count, double mtbf_hours) { return mtbf_hours > 0 ? count / (mtbf_hours * hour) : 0; }

// A redundant link at (k-1)/k of its bandwidth: one of its k physical links is down.
FailureEvent losing_one_of(const Fabric& fabric, int link) {
  const double k = fabric.physical_links(link);
  return {0.0, -1, fabric.links()[link].name, (k - 1) / k};
}

// What the scheduled failure `f` (reliability.failures[index]) does; throws
// InputError for a component the cluster lacks.
FailureSource scheduled_source(const Scenario& s, size_t index, const Fabric& fabric, double gpus, double nodes,
                               double leaf_switches) {
  const ScheduledFailure& f = s.run.reliability.scheduled[index];
  const std::string field = "reliability.failures[" + std::to_string(index) + "].";
  FailureSource source{f.component, 0, true};
  if (f.component == Component::link) {
    int link = -1;
    for (size_t l = 0; l < fabric.links().size(); ++l)
      if (fabric.links()[l].name == f.link) link = static_cast<int>(l);
    if (link < 0) throw InputError(s.source, field + "link", "no link '" + f.link + "' in this cluster");
    source.stops_job = !fabric.has_redundancy(link);
  } else {
    const double count = f.component == Component::gpu ? gpus : f.component == Component::node ? nodes : leaf_switches;
    if (f.index >= count)
      throw InputError(s.source, field + "index", "no " + to_string(f.component) + " " + std::to_string(f.index) +
                                                      " (the cluster has " + std::to_string(static_cast<int64_t>(count)) + ")");
  }
  return source;
}

}  // namespace

double physical_cables(const Fabric& fabric) {
  const LinkCounts links = count_links(fabric);
  return links.stopping + links.redundant;
}

ClusterFailures cluster_failures(const Scenario& s, int world_size) {
  const ReliabilityConfig& rel = s.run.reliability;
  const double nodes = std::ceil(static_cast<double>(world_size) / s.cluster.topology.gpus_per_node);
  const Fabric fabric(with_platform_routes(s.cluster.topology, world_size), world_size);
  const LinkCounts links = count_links(fabric);
  ClusterFailures failures;
  failures.random = {{Component::gpu, rate(world_size, rel.gpu_mtbf_hours), true},
                     {Component::node, rate(nodes, rel.node_mtbf_hours), true},
                     {Component::link, rate(links.stopping, rel.link_mtbf_hours), true},
                     {Component::link, rate(links.redundant, rel.link_mtbf_hours), false},
                     {Component::switch_, rate(links.leaf_switches, rel.switch_mtbf_hours), true}};
  double stop_rate = 0;
  for (const FailureSource& source : failures.random) stop_rate += source.stops_job ? source.rate_per_second : 0;
  failures.stop_mtbf_seconds = stop_rate > 0 ? 1 / stop_rate : 0;

  bool degrades = failures.random[3].rate_per_second > 0;
  for (size_t i = 0; i < rel.scheduled.size(); ++i) {
    const FailureSource source = scheduled_source(s, i, fabric, world_size, nodes, links.leaf_switches);
    degrades = degrades || !source.stops_job;
    failures.scheduled_stops = failures.scheduled_stops || source.stops_job;
    failures.scheduled.emplace_back(rel.scheduled[i].at_seconds, source);
  }
  if (degrades && links.representative_redundant >= 0)
    failures.degrading_failure = losing_one_of(fabric, links.representative_redundant);
  return failures;
}

void check_scheduled_before(const Scenario& s, double horizon_seconds) {
  const std::vector<ScheduledFailure>& scheduled = s.run.reliability.scheduled;
  for (size_t i = 0; i < scheduled.size(); ++i)
    if (scheduled[i].at_seconds > horizon_seconds)
      throw InputError(s.source, "reliability.failures[" + std::to_string(i) + "].at_hours",
                       "after the end of the run (" + with_commas(horizon_seconds / hour, 1) + " h without failures)");
}

FailureDraws::FailureDraws(const std::vector<FailureSource>& sources, uint64_t seed)
    : sources_(sources), random_(seed) {
  for (const FailureSource& s : sources_) total_rate_ += s.rate_per_second;
}

double FailureDraws::next_after(double from_seconds) {
  if (total_rate_ <= 0) return std::numeric_limits<double>::infinity();
  const double u = static_cast<double>(random_() >> 11) * 0x1.0p-53;
  return from_seconds - std::log1p(-u) / total_rate_;
}

const FailureSource& FailureDraws::source() {
  double u = static_cast<double>(random_() >> 11) * 0x1.0p-53 * total_rate_;
  for (const FailureSource& s : sources_)
    if ((u -= s.rate_per_second) < 0) return s;
  return sources_.back();
}

}  // namespace simtrain
