#pragma once
// Small helpers for the text reports people read.
#include <string>

namespace simtrain {

// printf-style formatting of one number: format("%.1f GiB", bytes / GiB).
std::string format(const char* pattern, double value);
// 1234567 -> "1,234,567"; with 1 decimal, 1234.56 -> "1,234.6"
std::string with_commas(double value, int decimals = 0);
// Three significant digits, or whole numbers with thousands separators (up to a quadrillion).
std::string significant(double value);
// "ALLREDUCE" -> "allreduce"
std::string to_lower(std::string text);
// Appends "label<padding>value\n", values aligned in one column.
void add_line(std::string& out, const std::string& label, const std::string& value);

}  // namespace simtrain
