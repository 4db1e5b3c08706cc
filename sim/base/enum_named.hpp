#pragma once
// Reading an enum back from the name its to_string gives (traces, Chakra
// attributes): the enums numbered 0 .. last.
#include <optional>
#include <string>

namespace simtrain {

// The value of Enum, from 0 to `last`, whose to_string is `text`.
template <class Enum>
std::optional<Enum> enum_named(const std::string& text, Enum last) {
  for (int i = 0; i <= static_cast<int>(last); ++i)
    if (to_string(static_cast<Enum>(i)) == text) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace simtrain
