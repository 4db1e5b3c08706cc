// The results of `simtrain simulate` on every shipped scenario, byte for
// byte: the text report, and the digests of the JSON report, the trace and
// the Program, against tests/golden/ (written by tests/golden/regenerate.sh).
// A refactoring must leave them all as they are; a change meant to alter the
// results regenerates them and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <regex>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;

const fs::path golden_dir = fs::path(SIMTRAIN_SOURCE_DIR) / "tests" / "golden";

struct GoldenScenario {
  std::string name;
  bool report_only = false;  // its trace and Program run to gigabytes
};

void PrintTo(const GoldenScenario& scenario, std::ostream* out) { *out << scenario.name; }

std::vector<GoldenScenario> golden_scenarios() {
  std::vector<GoldenScenario> scenarios;
  for (const fixtures::ListedScenario& s : fixtures::unit_tested_scenarios())
    scenarios.push_back({s.name, s.option == "report-only"});
  return scenarios;
}

// File name -> SHA-256, from `sha256sum` output.
std::map<std::string, std::string> golden_digests() {
  std::map<std::string, std::string> digests;
  std::ifstream in(golden_dir / "digests.sha256");
  std::string digest, file;
  while (in >> digest >> file) digests[file] = digest;
  return digests;
}

std::string file_digest(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  Sha256 sha;
  std::array<char, 1 << 16> buffer;
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0)
    sha.update(std::as_bytes(std::span(buffer.data(), static_cast<size_t>(in.gcount()))));
  return sha.hex_digest();
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string masked_wall_time(const std::string& report) {
  static const std::regex wall_time(R"(^(simulated .*), in [^,\n]+$)", std::regex::multiline);
  return std::regex_replace(report, wall_time, "$1, in <wall time>");
}

class GoldenOutputs : public testing::TestWithParam<GoldenScenario> {};

TEST_P(GoldenOutputs, SimulateAndScheduleAreUnchanged) {
  const GoldenScenario& scenario = GetParam();
  fixtures::TemporaryDirectory dir("golden");
  const fs::path out = dir.path() / scenario.name;
  const std::string simtrain = std::string(SIMTRAIN_BINARY) + " ";
  std::string simulate = simtrain + "simulate " + scenario.name + " --quiet --report " + out.string() + ".report.json";
  std::vector<std::string> digested = {".report.json"};
  if (!scenario.report_only) {
    simulate += " --trace " + out.string() + ".trace.json";
    ASSERT_EQ(run(simtrain + "schedule " + scenario.name + " --out " + out.string() + ".program.json"), 0);
    digested.insert(digested.end(), {".trace.json", ".program.json"});
  }
  ASSERT_EQ(run(simulate + " > " + out.string() + ".txt"), 0);

  EXPECT_EQ(masked_wall_time(fixtures::read_text(out.string() + ".txt")),
            fixtures::read_text(golden_dir / (scenario.name + ".txt")));
  const auto digests = golden_digests();
  for (const std::string& suffix : digested) {
    const std::string file = scenario.name + suffix;
    ASSERT_TRUE(digests.contains(file)) << file << " has no digest in tests/golden/digests.sha256";
    EXPECT_EQ(file_digest(dir.path() / file), digests.at(file)) << file << " differs from its golden digest";
  }
}

INSTANTIATE_TEST_SUITE_P(ShippedScenarios, GoldenOutputs, testing::ValuesIn(golden_scenarios()),
                         [](const testing::TestParamInfo<GoldenScenario>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(GoldenOutputs, EveryShippedScenarioIsChecked) {
  std::vector<std::string> listed, shipped;
  for (const fixtures::ListedScenario& s : fixtures::listed_scenarios()) listed.push_back(s.name);
  for (const auto& entry : fs::directory_iterator(fs::path(SIMTRAIN_SOURCE_DIR) / "scenarios"))
    if (entry.is_regular_file()) shipped.push_back(entry.path().stem().string());  // not scenarios/models/
  std::sort(listed.begin(), listed.end());
  std::sort(shipped.begin(), shipped.end());
  EXPECT_EQ(listed, shipped) << "tests/golden/scenarios.txt must list every file of scenarios/";
}

}  // namespace
}  // namespace simtrain
