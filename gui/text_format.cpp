#include "text_format.hpp"

#include <cmath>
#include <cstdio>

namespace simtrain::gui {

namespace {

std::string printed(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Three significant digits in the unit.
std::string with_unit(double value, const char* unit) {
  const double magnitude = std::fabs(value);
  const char* pattern = magnitude >= 100 ? "%.0f" : magnitude >= 10 ? "%.1f" : "%.2f";
  return printed(pattern, value) + " " + unit;
}

}  // namespace

DurationUnit duration_unit(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (magnitude >= 1 || magnitude == 0) return {1, "s"};
  if (magnitude >= 1e-3) return {1e3, "ms"};
  if (magnitude >= 1e-6) return {1e6, "µs"};
  return {1e9, "ns"};
}

std::string format_duration(double seconds) {
  if (seconds == 0) return "0 s";
  const DurationUnit unit = duration_unit(seconds);
  return with_unit(seconds * unit.per_second, unit.name);
}

std::string format_percent(double fraction) { return printed("%.1f %%", fraction * 100); }

}  // namespace simtrain::gui
