#pragma once
// How the GUI writes durations and shares.
#include <string>

namespace simtrain::gui {

std::string format_duration(double seconds);  // "1.23 s", "45.6 ms", "789 µs", "12 ns"
std::string format_percent(double fraction);  // "12.3 %"

}  // namespace simtrain::gui
