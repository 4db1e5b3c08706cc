#pragma once
// The text the timeline shows for a task (tooltip, status bar): name, kind,
// where and when it ran, its ops' shapes or its message size, and where its
// time came from (measured kernel, scaled, roofline; network simulation; trace).
// For a host slice: the task it launched, when, and when that task ran.
#include <string>

#include "sim/program/host_track.hpp"
#include "step_result.hpp"

namespace simtrain::gui {

std::string describe_task(const StepResult& step, int task);
std::string describe_host_launch(const StepResult& step, const HostSlice& slice);

}  // namespace simtrain::gui
