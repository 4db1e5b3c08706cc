#pragma once
// The failure rates a training run gets when its scenario states none: those
// Meta measured while 16,384 H100 GPUs trained Llama 3 405B (Llama Team, AI @
// Meta, "The Llama 3 Herd of Models", 2024, section 3.3.4, Table 5: 419
// unexpected interruptions in a 54-day snapshot, by root cause), turned into
// the failure model's per-component MTBFs (sim/longrun/failure_sources.hpp),
// and the spare nodes such a job keeps so that a failure rarely waits for a
// repair.
#include <string>
#include <vector>

#include "sim/scenario/run_config.hpp"

namespace simtrain {

// One row of Table 5, and the component of the failure model it is counted as.
struct InterruptionCause {
  const char* cause;
  int interruptions;
  Component component;
};

// Table 5's 419 unexpected interruptions. GPU faults count against GPUs;
// host faults, software bugs and NCCL watchdog timeouts (each stops the job
// as a lost node does) against nodes; switches, cables and NICs against
// physical links (the table does not tell switches from cables).
const std::vector<InterruptionCause>& llama3_interruptions();

inline constexpr double llama3_snapshot_hours = 54 * 24;
inline constexpr double llama3_gpus = 16384;
inline constexpr int llama3_gpus_per_node = 8;

// A spare pool large enough that a GPU or node failure finds a spare free
// this often: one for the failed node, and one for each other node still in
// repair when it fails, whose number follows a Poisson law (failures arrive
// at random, each repaired in repair_hours).
inline constexpr double spare_pool_confidence = 0.999;

struct PublishedRates {
  ReliabilityConfig reliability;  // `stated`'s other fields, with the MTBFs and spare nodes filled in
  std::string description;        // where the rates come from, for the report
};

// `stated`'s repair, detection and rescheduling times, with Table 5's MTBFs
// per GPU, node and physical link (`llama3_cables`: the physical links of
// Llama 3's fabric as the failure model counts them, see
// llama3_physical_links()) and, unless stated, spare nodes for a job of
// `world_size` GPUs on `gpus_per_node`.
PublishedRates published_failure_rates(const ReliabilityConfig& stated, bool spares_stated, int world_size,
                                       int gpus_per_node, double llama3_cables);

// The physical links of the roce-24k topology at Llama 3's 16,384 GPUs, counted as failures count them.
double llama3_physical_links();

// The smallest k with P(Poisson(mean) <= k) >= confidence.
int poisson_quantile(double mean, double confidence);

}  // namespace simtrain
