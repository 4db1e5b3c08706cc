#pragma once
// Checks of numeric command-line options (header-only, for the CLI11 command
// lines of apps/ and live/) whose messages say what is wanted ("must be at
// least 1, got 0"; "between 1 and 1,048,576"), where CLI11's ranges print
// both ends to 309 digits or with six decimals.
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/base/text_format.hpp"

namespace simtrain {

namespace detail {

// `wanted` says what the value must be; `fits` decides.
template <typename Fits>
CLI::Validator numeric_check(const std::string& wanted, Fits fits) {
  return CLI::Validator(
      [wanted, fits](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value) || !std::isfinite(value))
          return "must be a number " + wanted + ", got '" + input + "'";
        return fits(value) ? "" : "must be " + wanted + ", got " + input;
      },
      "");
}

}  // namespace detail

inline CLI::Validator at_least(double minimum) {
  return detail::numeric_check("at least " + number_text(minimum), [minimum](double v) { return v >= minimum; });
}

inline CLI::Validator more_than(double minimum) {
  return detail::numeric_check("more than " + number_text(minimum), [minimum](double v) { return v > minimum; });
}

inline CLI::Validator between(double minimum, double maximum) {
  return detail::numeric_check("between " + number_text(minimum) + " and " + number_text(maximum),
                               [=](double v) { return v >= minimum && v <= maximum; });
}

}  // namespace simtrain
