#pragma once
// What a report describes, as simulated (after `--set` overrides): the model,
// the cluster, the parallel layout, the batch and the training options.
// Every report (simulate, train, search) starts with it, so that no figure is
// read against a configuration other than the one that produced it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/workload.hpp"
#include "sim/scenario/scenario.hpp"

namespace simtrain {

// Both take the scenario's workload, for its parameter count.

// "label  value" lines, aligned like the rest of a text report (sim/base/text_format.hpp's add_line).
std::vector<std::string> scenario_summary_lines(const Scenario& scenario, const Workload& workload);

// What a SimGrid platform file changes, as NOTE lines aligned like the
// above and as JSON ({file, notes}); none (empty, null) for a JSON topology.
// Every report on a platform says it, a Chakra replay's too.
std::vector<std::string> platform_note_lines(const Topology& topology);
nlohmann::ordered_json platform_note_json(const Topology& topology);

// The same figures in the scenario's sections (model, cluster, parallelism,
// training) under the scenario's own field names, plus the derived ones:
// parameters, virtual_stages, micro_batches (per pipeline per step).
nlohmann::ordered_json scenario_summary_json(const Scenario& scenario, const Workload& workload);

}  // namespace simtrain
