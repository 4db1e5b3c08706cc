#pragma once
// A scatter plot as a standalone SVG document, for the search's cost/time
// Pareto front: every point in grey, the front's points joined and labelled,
// linear axes with round ticks and labels that give the units.
#include <ostream>
#include <string>
#include <vector>

namespace simtrain {

struct PlotPoint {
  double x = 0, y = 0;
  bool on_front = false;
  std::string label;  // shown beside front points
};

void write_pareto_svg(std::ostream& out, const std::vector<PlotPoint>& points, const std::string& title,
                      const std::string& x_label, const std::string& y_label);

}  // namespace simtrain
