// Inputs the fuzz targets (fuzz/) found to crash a reader, minimized: each is
// now refused with an InputError naming the file and the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/model/profile_database.hpp"
#include "sim/program/trace_reader.hpp"
#include "sim/scenario/scenario.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using fixtures::error_loading;
using testing::AllOf;
using testing::HasSubstr;

// fuzz_scenario: a --set value that is not JSON is taken as a string, and
// one with bytes that are not UTF-8 made the message (and the report, which
// holds the document) throw nlohmann's type_error while printing it.
TEST(FuzzFindings, OverrideThatIsNotUtf8) {
  EXPECT_EQ(error_loading("tiny-4gpu", {"zero_stage=1\xf4gpu=H200"}),
            "scenarios/tiny-4gpu.json: --set: not valid UTF-8");
}

// fuzz_hf_config: a number beyond a double's range is nlohmann's out_of_range,
// not a parse_error, and escaped as an unexpected exception.
TEST(FuzzFindings, NumberBeyondADoublesRange) {
  const fixtures::TemporaryDirectory dir{"fuzz-findings"};
  const std::string config = (dir.path() / "config.json").string();
  std::ofstream(config) << R"({"bos_token_id": 1e28000})";
  nlohmann::json scenario = fixtures::read_json(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/tiny-4gpu.json");
  scenario["model"] = "config.json";
  std::ofstream((dir.path() / "scenario.json").string()) << scenario.dump();
  EXPECT_THAT(error_loading((dir.path() / "scenario.json").string()),
              AllOf(HasSubstr(config + ": malformed JSON:"), HasSubstr("number overflow parsing '1e28000'")));
  // On the command line such a value is a word, refused where a number is due.
  EXPECT_THAT(error_loading("tiny-4gpu", {"seq_length=1e28000"}),
              HasSubstr("training.seq_length: expected an integer, got \"1e28000\""));
}

// fuzz_trace: the same number overflow in a Chrome trace escaped the trace
// reader, which caught only nlohmann's parse_error.
TEST(FuzzFindings, NumberBeyondADoublesRangeInATrace) {
  const fixtures::TemporaryDirectory dir{"fuzz-findings"};
  const std::string trace = (dir.path() / "trace.json").string();
  std::ofstream(trace) << R"({"traceEvents":[{"ph":"X","pid":0,"tid":0,"name":"a","cat":"F","ts":0,"dur":12E582912}]})";
  try {
    read_chrome_trace_file(trace);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr(trace + ": malformed JSON:"), HasSubstr("number overflow parsing '12E582912'")));
  }
}

// The seeds of fuzz_trace and fuzz_profile_database are valid inputs, so that
// fuzzing starts from what the readers accept (and notices a format change).
TEST(FuzzSeeds, AreAcceptedByTheirReaders) {
  const std::filesystem::path seeds = std::filesystem::path(SIMTRAIN_SOURCE_DIR) / "fuzz" / "seeds";
  int traces = 0, databases = 0;
  for (const auto& file : std::filesystem::directory_iterator(seeds / "trace")) {
    SCOPED_TRACE(file.path().string());
    EXPECT_FALSE(read_chrome_trace_file(file.path().string()).program.tasks.empty());
    ++traces;
  }
  for (const auto& file : std::filesystem::directory_iterator(seeds / "profile_database")) {
    SCOPED_TRACE(file.path().string());
    EXPECT_FALSE(load_profile_database(file.path().string()).entries.empty());
    ++databases;
  }
  EXPECT_GE(traces, 4);
  EXPECT_GE(databases, 3);
}

}  // namespace
}  // namespace simtrain
