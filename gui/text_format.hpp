#pragma once
// How the GUI writes durations and shares.
#include <string>

namespace simtrain::gui {

struct DurationUnit {
  double per_second;  // 1e3 for ms
  const char* name;
};
DurationUnit duration_unit(double seconds);   // the unit format_duration writes `seconds` in
std::string format_duration(double seconds);  // "1.23 s", "45.6 ms", "789 µs", "12 ns"
std::string format_percent(double fraction);  // "12.3 %"

}  // namespace simtrain::gui
