// A scenario file with --set overrides, as `simtrain simulate FILE --set ...`
// reads it. Input: the scenario's text, optionally followed by a NUL byte and
// one key=value override per line.
#include <sstream>
#include <vector>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simtrain;
  const std::string_view input = fuzz::as_text(data, size);
  const size_t end = std::min(input.find('\0'), input.size());
  std::vector<std::string> overrides;
  if (end < input.size()) {
    std::istringstream lines{std::string(input.substr(end + 1))};
    for (std::string line; std::getline(lines, line);) overrides.push_back(line);
  }
  const std::string path = fuzz::write_file("scenario.json", input.substr(0, end));
  fuzz::refusal_allowed([&] { fuzz::use(load_scenario(path, overrides)); });
  return 0;
}
