#pragma once
// Small helpers for the text reports people read.
#include <string>
#include <vector>

namespace simtrain {

// printf-style formatting of one number: format("%.1f GiB", bytes / GiB).
std::string format(const char* pattern, double value);
// 1234567 -> "1,234,567"; with 1 decimal, 1234.56 -> "1,234.6"
std::string with_commas(double value, int decimals = 0);
// Three significant digits, or whole numbers with thousands separators (up to a quadrillion).
std::string significant(double value);
// A bound or a count as written in a message: a whole number with thousands
// separators (1048576 -> "1,048,576"), any other as printf's %g (0.5 -> "0.5").
std::string number_text(double value);
// US dollars: whole dollars with thousands separators (692081.4 -> "$692,081"),
// with cents below $100 (3.5 -> "$3.50").
std::string dollars(double usd);
// A wall-clock duration for people: "42 s", "1m12s", "2h05m".
std::string wall_clock_text(double seconds);
// A signed relative difference (a - b) / a: a percentage ("+12.3%") while a
// and b are within a factor of 2 of each other; beyond, a / b, which a
// percentage of a hides (it tends to +100 % however much larger a grows):
// "16,024x" where a is 16,024 times b, "1/3x" where it is a third of it.
std::string relative_difference_text(double fraction);
// {"a", "b", "c"} -> "a, b, c" (or with another separator)
std::string joined(const std::vector<std::string>& parts, const std::string& separator = ", ");
// "ALLREDUCE" -> "allreduce"
std::string to_lower(std::string text);
// Appends "label<padding>value\n", values aligned in one column.
void add_line(std::string& out, const std::string& label, const std::string& value);

}  // namespace simtrain
