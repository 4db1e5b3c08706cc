#pragma once
// A Timeline as bytes, exact doubles included: how a replay's result comes
// back from the child process that simulated it.
//
// A symmetry-reduced replay runs one rank for many (a TP group's first rank
// for the group, a replica for its class), and each rank that did not run
// takes, position by position along its task list, the times of the rank
// that ran for it: its timing source. Only the sources' times travel, so a
// 3,072-GPU step that ran 64 ranks sends their tasks' times, not 3,072
// ranks' (which the receiving side lays out again).
#include <span>
#include <string>
#include <vector>

#include "sim/program/program.hpp"
#include "sim/program/timeline.hpp"

namespace simtrain {

// `figures`: the Timeline but its tasks and hosts' launches. `timing_source`:
// by rank, the rank whose times it takes (itself where it ran its own).
// `source_timings`: the times of the sources' tasks, source after source in
// rank order, each in its list's order (a pre-posted RECV's are not read: it
// takes its SEND's). Where the hosts were simulated (else both empty),
// `source_launches`: when each source's host launched each of those tasks,
// laid out alike; `host_done_seconds`: by rank, when a source's host was done.
std::string timeline_to_bytes(const Timeline& figures, const std::vector<int>& timing_source,
                              std::span<const TaskTiming> source_timings, std::span<const double> source_launches = {},
                              std::span<const double> host_done_seconds = {});

// The Timeline of `program`, every rank's tasks with their times, and where
// the hosts were simulated each source's host launches, the timing sources
// being the hosts (live is never sent). Throws std::runtime_error for bytes that end too soon, go on
// too long or name ranks the Program lacks.
Timeline timeline_from_bytes(const std::string& bytes, const Program& program);

}  // namespace simtrain
