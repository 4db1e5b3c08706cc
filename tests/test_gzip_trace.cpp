// Traces as .json.gz (sim/base/gzip_stream.hpp): gzip round trips, what
// `simulate --trace x.json.gz` writes is the plain trace compressed (under
// the output policy: no temporary file left beside it), it says what it is
// of in otherData, and the trace reader reads it as the plain one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/base/gzip_stream.hpp"
#include "sim/base/input_error.hpp"
#include "sim/program/trace_reader.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;

std::string gzipped(const std::string& text) {
  std::ostringstream out;
  gzip_compressed([&](std::ostream& o) { o << text; })(out);
  return out.str();
}

std::string gunzipped(const std::string& bytes, const std::string& source = "t.json.gz") {
  std::istringstream in(bytes);
  return read_maybe_gzipped(in, source);
}

TEST(Gzip, RoundTripsEmptySmallAndLargeText) {
  std::string large;
  for (int i = 0; i < 200000; ++i) large += "{\"ph\":\"X\",\"ts\":" + std::to_string(i) + "},\n";  // several buffers
  for (const std::string& text : {std::string(), std::string("x"), large}) {
    const std::string bytes = gzipped(text);
    ASSERT_GE(bytes.size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
    EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
    EXPECT_EQ(gunzipped(bytes), text);
    EXPECT_EQ(gzipped(text), bytes) << "compression is deterministic";
  }
  EXPECT_LT(gzipped(large).size(), large.size() / 5);
}

TEST(Gzip, PlainTextReadsAsItIs) { EXPECT_EQ(gunzipped("{\"traceEvents\":[]}"), "{\"traceEvents\":[]}"); }

TEST(Gzip, CorruptOrTruncatedDataIsAnInputErrorNamingTheFile) {
  const std::string bytes = gzipped(std::string(10000, 'a') + "b");
  try {
    gunzipped(bytes.substr(0, bytes.size() / 2));
    FAIL() << "a truncated stream was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("t.json.gz: corrupt gzip data: the data ends before the gzip stream does"));
  }
  std::string corrupt = bytes;
  corrupt[3] = '\xff';  // reserved header flags
  EXPECT_THROW(gunzipped(corrupt), InputError);
}

TEST(Gzip, OnlyNamesEndingInGzAreCompressed) {
  EXPECT_TRUE(is_gzip_path("step.json.gz"));
  EXPECT_FALSE(is_gzip_path("step.json"));
  EXPECT_FALSE(is_gzip_path(".gz"));
  EXPECT_FALSE(is_gzip_path("step.gzip"));
}

TEST(GzipTrace, SimulateWritesThePlainTraceCompressedAndCompareReadsIt) {
  fixtures::TemporaryDirectory dir{"gzip-trace"};
  const std::string plain = (dir.path() / "sim.json").string(), packed = (dir.path() / "sim.json.gz").string();
  const auto plain_run = fixtures::run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--trace", plain});
  ASSERT_EQ(plain_run.code, 0) << plain_run.err;
  const auto packed_run = fixtures::run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--trace", packed});
  ASSERT_EQ(packed_run.code, 0) << packed_run.err;
  const std::string text = fixtures::read_text(plain);
  EXPECT_EQ(gunzipped(fixtures::read_text(packed)), text);
  EXPECT_LT(fs::file_size(packed), fs::file_size(plain) / 5);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"sim.json", "sim.json.gz"})) << "no temporary file left";

  // What it is of: the scenario, its layout and the Program's hash.
  const nlohmann::json other = nlohmann::json::parse(text)["otherData"];
  EXPECT_EQ(other["source"], "simulation");
  EXPECT_EQ(other["scenario"], "tiny-4gpu");
  EXPECT_EQ(other["layout"], nlohmann::json::parse(R"({"tp":2,"pp":2,"dp":1,"virtual_stages":1,"micro_batches":8})"));
  EXPECT_EQ(other["program_hash"].get<std::string>().size(), 16u);

  const RecordedStep from_plain = read_chrome_trace_file(plain), from_packed = read_chrome_trace_file(packed);
  EXPECT_EQ(from_packed.program_hash, from_plain.program_hash);
  EXPECT_EQ(from_packed.origin.scenario, "tiny-4gpu");
  ASSERT_EQ(from_packed.timeline.tasks.size(), from_plain.timeline.tasks.size());
  for (size_t i = 0; i < from_plain.timeline.tasks.size(); ++i) {
    EXPECT_EQ(from_packed.timeline.tasks[i].start, from_plain.timeline.tasks[i].start);
    EXPECT_EQ(from_packed.timeline.tasks[i].end, from_plain.timeline.tasks[i].end);
  }
}

TEST(GzipTrace, ACorruptGzipTraceIsRefusedByCompare) {
  fixtures::TemporaryDirectory dir{"gzip-trace"};
  const std::string bad = (dir.path() / "bad.json.gz").string();
  std::ofstream(bad, std::ios::binary) << gzipped("{\"traceEvents\":[]}").substr(0, 12);
  const auto result = fixtures::run_simtrain({"compare", bad, bad});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr(bad + ": corrupt gzip data"));
}

}  // namespace
}  // namespace simtrain
