#pragma once
// Axis ticks as people read scales: at multiples of 1, 2 or 5 times a power
// of ten, labelled with as many decimals as the step needs (Qt-free, so tests
// can check it).
#include <string>
#include <vector>

namespace simtrain::gui {

// 1, 2 or 5 times a power of ten, at least `span` (> 0).
double nice_step(double span);

struct Ticks {
  double step = 0;
  std::vector<double> values;  // ascending, within [low, high]
};

// The finest 1-2-5 step that puts at most `max_ticks` (>= 2) ticks in [low, high]
// (low < high), and its multiples there: at least 3 where 8 are allowed.
Ticks nice_ticks(double low, double high, int max_ticks);

// Decimals that tell ticks `step` apart: 0 for 1, 2, 5, 10; 1 for 0.5; 2 for 0.05.
int tick_decimals(double step);

}  // namespace simtrain::gui
