#include "nice_ticks.hpp"

#include <algorithm>
#include <cmath>

namespace simtrain::gui {

double nice_step(double span) {
  const double power = std::pow(10.0, std::floor(std::log10(span)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= span * (1 - 1e-12)) return m * power;
  return 10 * power;
}

Ticks nice_ticks(double low, double high, int max_ticks) {
  const auto count = [&](double step) {
    return static_cast<int>(std::floor(high / step + 1e-9) - std::ceil(low / step - 1e-9)) + 1;
  };
  // From a step fine enough to give more than max_ticks ticks, coarser until
  // they fit: the finest that does, so that there are several.
  Ticks ticks;
  ticks.step = nice_step((high - low) / (4.0 * max_ticks));
  while (count(ticks.step) > max_ticks) ticks.step = nice_step(ticks.step * 1.5);
  // Integer multiples, so that 0.1 + 0.2 does not drift; 0 rather than -0.
  for (double k = std::ceil(low / ticks.step - 1e-9); k * ticks.step <= high + ticks.step * 1e-9; ++k)
    ticks.values.push_back(k == 0 ? 0.0 : k * ticks.step);
  return ticks;
}

int tick_decimals(double step) { return std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9))); }

}  // namespace simtrain::gui
