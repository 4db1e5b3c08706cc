#pragma once
// How the GUI writes durations and shares.
#include <optional>
#include <string>

namespace simtrain::gui {

struct DurationUnit {
  double per_second;  // 1e3 for ms
  const char* name;
};
DurationUnit duration_unit(double seconds);   // the unit format_duration writes `seconds` in
std::string format_duration(double seconds);  // "1.23 s", "45.6 ms", "789 µs", "12 ns"
std::string format_percent(double fraction);  // "12.3 %"
// B against A: in percent of A while they are within a factor of 2 ("+12.3 %",
// "−9.3 %"); beyond, B / A ("29.6x", "1/29.6x"), which a percentage hides (it
// tends to −100 % however small B gets); in percentage points for shares
// ("−7.4 pt"); "new" where A is 0 and B is not; none where it rounds to nothing.
std::optional<std::string> format_change(double a, double b, bool shares);

}  // namespace simtrain::gui
