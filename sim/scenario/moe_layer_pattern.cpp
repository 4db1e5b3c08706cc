#include "sim/scenario/moe_layer_pattern.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "sim/base/input_error.hpp"
#include "sim/base/limits.hpp"

namespace simtrain {

namespace {

// expression := term ('+' term)*; term := atom ('*' integer)*;
// atom := '[' (0|1) (',' (0|1))* ']' | '(' expression ')'. Lists longer
// than the layer limit are refused as soon as they are built.
class PatternParser {
public:
  PatternParser(const std::string& text, const std::string& source, const std::string& flag)
      : text_(text), source_(source), flag_(flag) {}

  std::vector<bool> parse() {
    std::vector<bool> pattern = expression();
    if (peek() != '\0') fail("unexpected '" + std::string(1, peek()) + "'");
    return pattern;
  }

private:
  [[noreturn]] void fail(const std::string& reason) const {
    throw InputError(source_, flag_, "expected an integer or a list expression such as [0]*3+[1]*58, got '" + text_ +
                                         "': " + reason);
  }

  char peek() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    return at_ < text_.size() ? text_[at_] : '\0';
  }

  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }

  void check_size(size_t size) const {
    if (size > static_cast<size_t>(limits::max_layers))
      fail("more than " + std::to_string(limits::max_layers) + " layers");
  }

  int64_t integer() {
    peek();
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
    if (error != std::errc() || value < 0) fail("expected a count");
    at_ = end - text_.data();
    return value;
  }

  std::vector<bool> expression() {
    std::vector<bool> pattern = term();
    while (peek() == '+') {
      ++at_;
      const std::vector<bool> more = term();
      check_size(pattern.size() + more.size());
      pattern.insert(pattern.end(), more.begin(), more.end());
    }
    return pattern;
  }

  std::vector<bool> term() {
    std::vector<bool> pattern = atom();
    while (peek() == '*') {
      ++at_;
      const int64_t times = integer();
      if (times != 0) check_size(pattern.size() * std::min<int64_t>(times, limits::max_layers + 1));
      std::vector<bool> repeated;
      for (int64_t i = 0; i < times; ++i) repeated.insert(repeated.end(), pattern.begin(), pattern.end());
      pattern = std::move(repeated);
    }
    return pattern;
  }

  std::vector<bool> atom() {
    if (peek() == '(') {
      ++at_;
      std::vector<bool> pattern = expression();
      expect(')');
      return pattern;
    }
    expect('[');
    std::vector<bool> list;
    while (true) {
      const int64_t value = integer();
      if (value > 1) fail("layer kinds are 0 (dense) or 1 (MoE), got " + std::to_string(value));
      list.push_back(value == 1);
      check_size(list.size());
      if (peek() != ',') break;
      ++at_;
    }
    expect(']');
    return list;
  }

  const std::string& text_;
  const std::string& source_;
  const std::string& flag_;
  size_t at_ = 0;
};

}  // namespace

std::vector<bool> moe_layer_pattern(const std::string& text, int64_t layers, const std::string& source,
                                    const std::string& flag) {
  int64_t every = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), every);
  if (error == std::errc() && end == text.data() + text.size()) {
    if (every < 1) throw InputError(source, flag, "must be at least 1, got " + text);
    std::vector<bool> pattern;
    for (int64_t layer = 0; layer < layers; ++layer) pattern.push_back(layer % every == 0);
    return pattern;
  }
  std::vector<bool> pattern = PatternParser(text, source, flag).parse();
  if (static_cast<int64_t>(pattern.size()) != layers)
    throw InputError(source, flag, "gives " + std::to_string(pattern.size()) + " layers, the model has " +
                                       std::to_string(layers) + " (--num-layers)");
  return pattern;
}

}  // namespace simtrain
