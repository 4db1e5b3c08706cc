#include "sim/base/text_format.hpp"

#include <algorithm>

#include <cctype>
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

std::string to_lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

void add_line(std::string& out, const std::string& label, const std::string& value) {
  constexpr size_t value_column = 22;
  out += label + std::string(label.size() < value_column ? value_column - label.size() : 1, ' ') + value + "\n";
}

}  // namespace simtrain
