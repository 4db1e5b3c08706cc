#include "sim/search/pareto_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace simtrain {

namespace {

constexpr double width = 800, height = 560;
constexpr double left = 90, right = 30, top = 50, bottom = 70;  // margins around the plot area

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// A value range widened to round ticks (1, 2 or 5 times a power of ten), and
// the ticks; logarithmic when the values span more than a factor of 20.
struct Axis {
  bool log = false;
  double low = 0, high = 1;
  std::vector<double> ticks;

  Axis(double min, double max) {
    if (min > 0 && max / min > 20) {
      log = true;
      low = std::pow(10, std::floor(std::log10(min)));
      high = std::pow(10, std::ceil(std::log10(max)));
      for (double decade = low; decade < high * 1.01; decade *= 10)
        for (double f : {1.0, 2.0, 5.0})
          if (f * decade <= high * 1.01) ticks.push_back(f * decade);
      return;
    }
    if (max <= min) max = min + std::max(1.0, std::abs(min));
    const double raw = (max - min) / 5;
    const double magnitude = std::pow(10, std::floor(std::log10(raw)));
    double step = magnitude;
    for (double f : {1.0, 2.0, 5.0, 10.0})
      if (f * magnitude >= raw) {
        step = f * magnitude;
        break;
      }
    low = std::floor(min / step) * step;
    high = std::ceil(max / step) * step;
    for (double t = low; t <= high + step / 2; t += step) ticks.push_back(std::abs(t) < step / 1e6 ? 0 : t);
  }
  double at(double value, double from, double to) const {
    const double f = log ? std::log(value / low) / std::log(high / low) : (value - low) / (high - low);
    return from + f * (to - from);
  }
  std::string name(const std::string& label) const { return log ? label + ", log scale" : label; }
};

}  // namespace

void write_pareto_svg(std::ostream& out, const std::vector<PlotPoint>& points, const std::string& title,
                      const std::string& x_label, const std::string& y_label) {
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  if (!points.empty()) {
    auto [xl, xh] = std::minmax_element(points.begin(), points.end(), [](auto& a, auto& b) { return a.x < b.x; });
    auto [yl, yh] = std::minmax_element(points.begin(), points.end(), [](auto& a, auto& b) { return a.y < b.y; });
    x_min = xl->x, x_max = xh->x, y_min = yl->y, y_max = yh->y;
  }
  const Axis x_axis(x_min, x_max), y_axis(y_min, y_max);
  const double x0 = left, x1 = width - right, y0 = height - bottom, y1 = top;
  auto px = [&](double x) { return number(x_axis.at(x, x0, x1)); };
  auto py = [&](double y) { return number(y_axis.at(y, y0, y1)); };

  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">" << escaped(title)
      << "</text>\n";
  for (double t : x_axis.ticks)
    out << "<line x1=\"" << px(t) << "\" y1=\"" << y0 << "\" x2=\"" << px(t) << "\" y2=\"" << y1
        << "\" stroke=\"#e5e5e5\"/>\n<text x=\"" << px(t) << "\" y=\"" << y0 + 18
        << "\" text-anchor=\"middle\">" << tick_label(t) << "</text>\n";
  for (double t : y_axis.ticks)
    out << "<line x1=\"" << x0 << "\" y1=\"" << py(t) << "\" x2=\"" << x1 << "\" y2=\"" << py(t)
        << "\" stroke=\"#e5e5e5\"/>\n<text x=\"" << x0 - 8 << "\" y=\"" << py(t)
        << "\" text-anchor=\"end\" dominant-baseline=\"middle\">" << tick_label(t) << "</text>\n";
  out << "<rect x=\"" << x0 << "\" y=\"" << y1 << "\" width=\"" << x1 - x0 << "\" height=\"" << y0 - y1
      << "\" fill=\"none\" stroke=\"black\"/>\n"
      << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << height - 20 << "\" text-anchor=\"middle\">"
      << escaped(x_axis.name(x_label)) << "</text>\n"
      << "<text x=\"22\" y=\"" << (y0 + y1) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 22 "
      << (y0 + y1) / 2 << ")\">" << escaped(y_axis.name(y_label)) << "</text>\n";

  for (const PlotPoint& p : points)
    if (!p.on_front) out << "<circle cx=\"" << px(p.x) << "\" cy=\"" << py(p.y) << "\" r=\"3\" fill=\"#bbbbbb\"/>\n";
  std::vector<PlotPoint> front;
  std::copy_if(points.begin(), points.end(), std::back_inserter(front), [](const PlotPoint& p) { return p.on_front; });
  std::sort(front.begin(), front.end(), [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
  if (!front.empty()) {
    out << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < front.size(); ++i) out << (i ? " " : "") << px(front[i].x) << "," << py(front[i].y);
    out << "\"/>\n";
  }
  for (size_t i = 0; i < front.size(); ++i) {
    const PlotPoint& p = front[i];
    const double dy = i % 2 ? 14 : -8;  // neighbours' labels above and below
    out << "<circle cx=\"" << px(p.x) << "\" cy=\"" << py(p.y) << "\" r=\"5\" fill=\"#1f77b4\"/>\n<text x=\""
        << number(x_axis.at(p.x, x0, x1) + 8) << "\" y=\"" << number(y_axis.at(p.y, y0, y1) + dy)
        << "\" font-size=\"10\">" << escaped(p.label) << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace simtrain
