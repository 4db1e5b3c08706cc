#pragma once
// Which ranks a Chrome trace shows (`simtrain simulate --trace-ranks`):
//   representatives   the ranks whose simulated tasks stand for others
//                     (Timeline::representative_of_rank), every rank when each
//                     simulated its own (the default)
//   all               every rank; one a representative stands for shows its times
//   stage:0,3         the ranks of those pipeline ranks (RankCoord::pp)
//   rank:17,1024      those ranks
#include <string>
#include <vector>

#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"

namespace simtrain {

struct TraceRanks {
  enum class Mode { representatives, all, stages, ranks };
  Mode mode = Mode::representatives;
  std::vector<int> values;  // stages or ranks, ascending, each once
};

// Parses the option's text; throws InputError("simulate", option, reason).
TraceRanks parse_trace_ranks(const std::string& text, const std::string& option = "--trace-ranks");

// Refuses a stage or rank beyond a job of `world_size` ranks in
// `pipeline_size` pipeline ranks, before anything is simulated.
void check_trace_ranks(const TraceRanks& selection, int world_size, int pipeline_size,
                       const std::string& option = "--trace-ranks");

// The ranks of the Program the selection shows, ascending (checked as above).
std::vector<int> selected_ranks(const TraceRanks& selection, const Program& program, const Timeline& timeline);

}  // namespace simtrain
