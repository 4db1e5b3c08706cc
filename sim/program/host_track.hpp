#pragma once
// A rank's host track, where the hosts were simulated (Timeline::host_of_rank):
// a slice for each task its host launched, from when it began launching it to
// when it went on to the next (a task that synchronises holds its slice until
// the GPU lets the host go), the last to when it had launched them all. A RECV
// posted with its SEND has none. The trace writes these slices as the rank's
// "host" thread and reads them back; the GUI draws them as its host row.
#include <vector>

#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"

namespace simtrain {

struct HostSlice {
  int task = -1;  // the task launched (of the rank's own list)
  double start_seconds = 0;
  double end_seconds = 0;
};

// In the rank's list order (so by start); empty where the hosts were not
// simulated. Throws std::logic_error where the rank's host launched another
// number of tasks than the rank has.
std::vector<HostSlice> host_track(const Program& program, const Timeline& timeline, int rank);

}  // namespace simtrain
