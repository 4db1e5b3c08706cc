#pragma once
// Clusters are not uniform: some GPUs run slower (thermal throttling, bad
// HBM, noisy neighbours) and some links deliver less than their line rate.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/base/json_fields.hpp"

namespace simtrain {

struct Heterogeneity {
  std::vector<double> gpu_speed_factors;                  // per rank, 1 = nominal; empty = all nominal
  std::map<std::string, double> link_bandwidth_factors;   // link name (as in the fabric) -> fraction of its bandwidth
};

// Reads cluster.gpu_speed_factors ({"rank": factor}), cluster.stragglers
// ({fraction, speed_factor, seed}: that share of GPUs, drawn with the seed, runs
// at that speed) and cluster.link_bandwidth_factors ({"link": factor}).
Heterogeneity parse_heterogeneity(JsonFields& cluster, int64_t num_gpus);

}  // namespace simtrain
