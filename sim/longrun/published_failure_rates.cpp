#include "sim/longrun/published_failure_rates.hpp"

#include <cmath>

#include "sim/base/text_format.hpp"
#include "sim/longrun/failure_sources.hpp"
#include "sim/network/fabric.hpp"
#include "sim/scenario/topology.hpp"

namespace simtrain {

const std::vector<InterruptionCause>& llama3_interruptions() {
  static const std::vector<InterruptionCause> causes = {
      {"faulty GPU", 148, Component::gpu},
      {"GPU HBM3 memory", 72, Component::gpu},
      {"software bug", 54, Component::node},
      {"network switch/cable", 35, Component::link},
      {"host maintenance", 32, Component::node},
      {"GPU SRAM memory", 19, Component::gpu},
      {"GPU system processor", 17, Component::gpu},
      {"NIC", 7, Component::link},
      {"NCCL watchdog timeouts", 7, Component::node},
      {"silent data corruption", 6, Component::gpu},
      {"GPU thermal interface and sensor", 6, Component::gpu},
      {"SSD", 3, Component::node},
      {"power supply", 3, Component::node},
      {"server chassis", 2, Component::node},
      {"IO expansion board", 2, Component::node},
      {"dependency", 2, Component::node},
      {"CPU", 2, Component::node},
      {"system memory", 2, Component::node},
  };
  return causes;
}

namespace {

double interruptions_of(Component component) {
  double count = 0;
  for (const InterruptionCause& c : llama3_interruptions()) count += c.component == component ? c.interruptions : 0;
  return count;
}

// Hours one component of `count` ran in the snapshot, per interruption it caused.
double mtbf_hours(double count, Component component) {
  return count * llama3_snapshot_hours / interruptions_of(component);
}

}  // namespace

double llama3_physical_links() {
  const Topology topology = topology_from_json("roce-24k", "the published failure rates", "", ".");
  return physical_cables(Fabric(topology, static_cast<int>(llama3_gpus)));
}

int poisson_quantile(double mean, double confidence) {
  double term = std::exp(-mean), cumulative = term;
  int k = 0;
  while (cumulative < confidence) {
    ++k;
    term *= mean / k;
    cumulative += term;
  }
  return k;
}

PublishedRates published_failure_rates(const ReliabilityConfig& stated, bool spares_stated, int world_size,
                                       int gpus_per_node, double llama3_cables) {
  PublishedRates published;
  ReliabilityConfig& r = published.reliability = stated;
  r.gpu_mtbf_hours = mtbf_hours(llama3_gpus, Component::gpu);
  r.node_mtbf_hours = mtbf_hours(llama3_gpus / llama3_gpus_per_node, Component::node);
  r.link_mtbf_hours = mtbf_hours(llama3_cables, Component::link);
  r.switch_mtbf_hours = 0;  // counted with the cables
  published.description = "Llama 3 405B's, measured on 16,384 H100 (Llama 3 paper, section 3.3.4, Table 5): MTBF " +
                          with_commas(r.gpu_mtbf_hours) + " h per GPU, " + with_commas(r.node_mtbf_hours) +
                          " h per node, " + with_commas(r.link_mtbf_hours) +
                          " h per physical link; the scenario states none (--no-failures: none)";
  if (!spares_stated) {
    const double nodes = std::ceil(static_cast<double>(world_size) / gpus_per_node);
    const double failures_per_hour = world_size / r.gpu_mtbf_hours + nodes / r.node_mtbf_hours;
    r.spare_nodes = 1 + poisson_quantile(failures_per_hour * r.repair_hours, spare_pool_confidence);
    published.description += "; " + std::to_string(r.spare_nodes) +
                             (r.spare_nodes == 1 ? " spare node" : " spare nodes") +
                             format(", so that %g %% of failures find one free", 100 * spare_pool_confidence);
  }
  return published;
}

}  // namespace simtrain
