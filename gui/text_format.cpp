#include "text_format.hpp"

#include <cmath>
#include <cstdio>

#include "sim/base/text_format.hpp"

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

std::optional<std::string> format_change(double a, double b, bool shares) {
  if (shares) {
    const double points = (b - a) * 100;
    if (std::fabs(points) < 0.05) return std::nullopt;
    return (points > 0 ? "+" : "−") + printed("%.1f pt", std::fabs(points));
  }
  if (a == 0) return b == 0 ? std::nullopt : std::optional<std::string>("new");
  const double ratio = b / a;
  if (ratio >= 2) return significant(ratio) + "x";
  if (ratio > 0 && ratio <= 0.5) return "1/" + significant(1 / ratio) + "x";
  const double percent = (ratio - 1) * 100 * (a < 0 ? -1 : 1);
  if (std::fabs(percent) < 0.05) return std::nullopt;
  return (percent > 0 ? "+" : "−") + printed("%.1f %%", std::fabs(percent));
}

}  // namespace simtrain::gui
