#pragma once
// `simtrain simulate --chakra PREFIX --topology T --gpu G`: Chakra execution
// traces (sim/chakra/chakra_import.hpp) replayed on simtrain's network model,
// compute as recorded, and the step report of what a timeline gives: step
// time, where each stage's (or rank's) time went, the busiest links; the
// recorded num_ops as FLOPs (with recompute, if the traces hold it). Memory
// and model FLOPs are not in the traces, so the report has none.
#include <string>

#include "sim/chakra/chakra_import.hpp"
#include "sim/engine/replay_options.hpp"
#include "sim/program/timeline.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/topology.hpp"
#include "sim/step/report.hpp"

namespace simtrain {

struct ChakraSimulation {
  ChakraTraces traces;
  Timeline timeline;
  StepReport report;
};

// `traces` read from `prefix` (import_chakra). Throws InputError for a topology too small for their ranks.
ChakraSimulation simulate_chakra(ChakraTraces traces, const std::string& prefix, const Topology& topology,
                                 const GpuSpec& gpu, const ReplayOptions& options);

}  // namespace simtrain
