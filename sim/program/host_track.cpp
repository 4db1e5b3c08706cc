#include "sim/program/host_track.hpp"

#include <stdexcept>
#include <string>

namespace simtrain {

std::vector<HostSlice> host_track(const Program& program, const Timeline& timeline, int rank) {
  if (timeline.host_of_rank.empty()) return {};
  const std::vector<double>& launches = timeline.host_launch_seconds.at(timeline.host_of_rank.at(rank));
  const RankTaskIds ids = program.rank_tasks(rank);
  if (launches.size() != ids.size() + 1)
    throw std::logic_error("rank " + std::to_string(rank) + "'s host launched " +
                           std::to_string(static_cast<long>(launches.size()) - 1) + " tasks of its " +
                           std::to_string(ids.size()));
  std::vector<HostSlice> slices;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (launches[i] < 0) continue;  // posted with its SEND
    size_t next = i + 1;
    while (next < ids.size() && launches[next] < 0) ++next;
    slices.push_back({ids[i], launches[i], launches[next]});
  }
  return slices;
}

}  // namespace simtrain
