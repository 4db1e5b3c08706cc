#include "sim/base/text_format.hpp"

#include <cctype>
#include <cstdio>

namespace simtrain {

std::string format(const char* pattern, double value) {
  char text[96];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string with_commas(double value) {
  std::string digits = format("%.0f", value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0 && digits[i - 1] != '-'; i -= 3) digits.insert(i, ",");
  return digits;
}

std::string to_lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

void add_line(std::string& out, const std::string& label, const std::string& value) {
  constexpr size_t value_column = 22;
  out += label + std::string(label.size() < value_column ? value_column - label.size() : 1, ' ') + value + "\n";
}

}  // namespace simtrain
