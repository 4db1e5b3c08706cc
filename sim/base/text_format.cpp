#include "sim/base/text_format.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace simtrain {

std::string format(const char* pattern, double value) {
  char text[96];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string with_commas(double value, int decimals) {
  const std::string digits = format(("%." + std::to_string(decimals) + "f").c_str(), value);
  const size_t sign = digits[0] == '-' ? 1 : 0;
  const size_t point = std::min(digits.find('.'), digits.size());
  std::string out = digits.substr(0, sign);
  for (size_t i = sign; i < point; ++i) {
    if (i > sign && (point - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out + digits.substr(point);
}

std::string significant(double value) { return value < 1000 || value >= 1e15 ? format("%.3g", value) : with_commas(value); }

std::string number_text(double value) {
  return std::isfinite(value) && value == std::floor(value) && std::abs(value) < 1e15 ? with_commas(value)
                                                                                       : format("%g", value);
}

std::string dollars(double usd) {
  const std::string amount = std::abs(usd) < 100 ? with_commas(std::abs(usd), 2) : with_commas(std::abs(usd));
  return (usd < 0 ? "-$" : "$") + amount;
}

std::string wall_clock_text(double seconds) {
  char text[32];
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60)
    std::snprintf(text, sizeof text, "%ld s", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s / 60 % 60);
  return text;
}

std::string relative_difference_text(double fraction) {
  if (fraction > 0.5 && fraction < 1) return significant(1 / (1 - fraction)) + "x";
  if (fraction < -1) return "1/" + significant(1 - fraction) + "x";
  return format("%+.1f%%", fraction * 100);
}

std::string to_lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

void add_line(std::string& out, const std::string& label, const std::string& value) {
  constexpr size_t value_column = 22;
  out += label + std::string(label.size() < value_column ? value_column - label.size() : 1, ' ') + value + "\n";
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? separator : "") + parts[i];
  return out;
}

}  // namespace simtrain
