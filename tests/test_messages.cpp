// Messages people read say what is wrong in their terms (issue 39, item 9):
// no library internals (nlohmann/json's exception codes, a binary file's raw
// bytes), integers as integers with thousands separators, money with them,
// and a comparison whose gap is not capped at +100 %.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/base/json_fields.hpp"
#include "sim/base/text_format.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using fixtures::CliResult;
using fixtures::run_simtrain;

class Messages : public testing::Test {
protected:
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(at(name), std::ios::binary) << bytes;
    return at(name);
  }
  std::string at(const std::string& name) const { return (dir_.path() / name).string(); }
  fixtures::TemporaryDirectory dir_{"messages"};
};

void expect_error(const CliResult& result, const std::string& message) {
  EXPECT_EQ(result.code, 2);
  EXPECT_EQ(result.err, message);
  EXPECT_EQ(result.out, "");
}

TEST_F(Messages, ATruncatedScenarioSaysWhereItEnds) {
  const std::string path = write("cut.json", "{\"name\": \"x\",\n \"model\": {\n");
  expect_error(run_simtrain({"simulate", path}), "simtrain: " + path +
                                                     ": malformed JSON at line 3, column 1: unexpected end of input; "
                                                     "expected string literal (is the file cut short?)\n");
}

TEST_F(Messages, ABinaryFileIsNamedAsSuchWithoutItsBytes) {
  const std::string elf = write("program.json", std::string("\x7f" "ELF\x02\x01\x01\x00", 8));
  expect_error(run_simtrain({"simulate", elf}),
               "simtrain: " + elf + ": not a JSON text file: byte 0x7F at line 1, column 1 is not text\n");
  const std::string gzip = write("scenario.json", std::string("\x1f\x8b\x08\x00", 4));
  expect_error(run_simtrain({"simulate", gzip}),
               "simtrain: " + gzip + ": not a JSON text file: byte 0x1F at line 1, column 1 is not text\n");
}

TEST_F(Messages, ASyntaxErrorSaysWhatWasReadThere) {
  const std::string path = write("typo.json", "{\"name\": tru}");
  expect_error(run_simtrain({"simulate", path}),
               "simtrain: " + path + ": malformed JSON at line 1, column 13: invalid literal (near '\"name\": tru}')\n");
}

TEST_F(Messages, ABinaryTraceIsNamedAsSuch) {
  const std::string sim = write("sim.json", std::string("\x7f" "ELF", 4));
  const std::string live = write("live.json", "{}");
  expect_error(run_simtrain({"compare", sim, live}),
               "simtrain: " + sim + ": not a JSON text file: byte 0x7F at line 1, column 1 is not text\n");
}

TEST(JsonErrorReason, LeavesNoLibraryCode) {
  try {
    (void)nlohmann::json::parse("[1, 2");
    FAIL() << "parsed";
  } catch (const nlohmann::json::exception& error) {
    EXPECT_EQ(json_error_reason(error),
              "malformed JSON at line 1, column 6: unexpected end of input; expected ']' (is the file cut short?)");
  }
  try {
    (void)nlohmann::json::parse("1e999");
    FAIL() << "parsed";
  } catch (const nlohmann::json::exception& error) {
    EXPECT_EQ(json_error_reason(error), "number overflow parsing '1e999'");
  }
}

TEST(MessageText, RangesPrintIntegersAsIntegers) {
  expect_error(run_simtrain({"from-megatron", "--num-layers 2", "--gpu", "H100-SXM", "--topology", "dgx-h100-superpod",
                             "--num-gpus", "2000000"}),
               "simtrain: --num-gpus: must be between 1 and 1,048,576, got 2000000\n");
  expect_error(run_simtrain({"search", "tiny-4gpu", "--tie", "120"}), "simtrain: --tie: must be between 0 and 99, got 120\n");
  expect_error(run_simtrain({"train", "tiny-4gpu", "--runs", "0"}),
               "simtrain: --runs: must be between 1 and 100,000, got 0\n");
  EXPECT_EQ(number_text(0.5), "0.5");
  EXPECT_EQ(number_text(-3), "-3");
  EXPECT_EQ(number_text(1e20), "1e+20");
}

TEST(MessageText, MoneyHasThousandsSeparators) {
  EXPECT_EQ(dollars(692081.4), "$692,081");
  EXPECT_EQ(dollars(2211837), "$2,211,837");
  EXPECT_EQ(dollars(3.5), "$3.50");
  EXPECT_EQ(dollars(-1500), "-$1,500");
}

TEST(MessageText, RelativeDifferencesBeyondAFactorOfTwoAreRatios) {
  EXPECT_EQ(relative_difference_text(0.123), "+12.3%");
  EXPECT_EQ(relative_difference_text(0.5), "+50.0%");    // twice as long: still a percentage
  EXPECT_EQ(relative_difference_text(-1), "-100.0%");    // half as long
  EXPECT_EQ(relative_difference_text(15999.0 / 16000), "16,000x");
  EXPECT_EQ(relative_difference_text(-2), "1/3x");
  EXPECT_EQ(relative_difference_text(-15999), "1/16,000x");
}

// A live step 16,000 times as long as the simulated one: compare says so,
// where a percentage of the live time said +100.0 %. (With free launches the
// simulated step starts with its first task, as a live trace's does.)
TEST_F(Messages, CompareNamesAHugeGapAsARatio) {
  ASSERT_EQ(run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--free-launches", "--trace", at("sim.json")}).code, 0);
  nlohmann::json trace = fixtures::read_json(at("sim.json"));
  trace["otherData"]["source"] = "live";
  trace["otherData"]["device"] = "host CPU (MPI backend)";
  trace["otherData"]["dtype"] = "bf16";
  for (nlohmann::json& event : trace["traceEvents"])
    if (event["ph"] == "X") {
      event["ts"] = event["ts"].get<double>() * 16000;
      event["dur"] = event["dur"].get<double>() * 16000;
    }
  std::ofstream(at("live.json")) << trace.dump();
  const CliResult r = run_simtrain({"compare", at("sim.json"), at("live.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, testing::HasSubstr("live, error 16,000x\n"));
  EXPECT_THAT(r.out, testing::ContainsRegex("\nF +[0-9]+ +16,000x +16,000x "));
  EXPECT_THAT(r.out, testing::Not(testing::HasSubstr("+100.0%")));
}

}  // namespace
}  // namespace simtrain
