#pragma once
// The text the timeline shows for a task (tooltip, status bar): name, kind,
// where and when it ran, its ops' shapes or its message size, and where its
// time came from (measured kernel, scaled, roofline; network simulation; trace).
#include <string>

#include "step_result.hpp"

namespace simtrain::gui {

std::string describe_task(const StepResult& step, int task);

}  // namespace simtrain::gui
