#include "sim/scenario/pipeline_layout_string.hpp"

#include <algorithm>
#include <regex>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"

namespace simtrain {

namespace {

// Replaces each match of `pattern` (group 1 the text, group 2 the count) by
// the text repeated, in one left-to-right pass as Python's re.sub does;
// false where the result would exceed limits::max_layout_chars.
bool repeat_matches(std::string& text, const std::regex& pattern) {
  std::string out;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    const std::smatch& match = *it;
    out.append(last, match[0].first);
    const std::string count = match[2].str();
    const size_t repeats = count.size() > 9 ? limits::max_layout_chars + 1 : std::stoul(count);
    if (out.size() + repeats * match[1].length() > limits::max_layout_chars) return false;
    for (size_t i = 0; i < repeats; ++i) out += match[1].str();
    last = match[0].second;
  }
  out.append(last, text.cend());
  text = std::move(out);
  return text.size() <= limits::max_layout_chars;
}

}  // namespace

std::vector<std::string> layout_stages(const std::string& layout, const std::string& file, const std::string& field) {
  std::string text = layout;
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  if (!repeat_matches(text, std::regex(R"(\(([^)]+)\)\*(\d+))")) || !repeat_matches(text, std::regex(R"((.)\*(\d+))")))
    throw InputError(file, field, "expands to more than " + std::to_string(limits::max_layout_chars) + " characters");
  std::vector<std::string> stages(1);
  for (char c : text) {
    if (c == '|')
      stages.emplace_back();
    else
      stages.back() += c;
  }
  return stages;
}

}  // namespace simtrain
