// One overwrite rule for every command that writes files (issue 39, item 4):
// an existing regular file is replaced only with --force; standard output
// ("-"), devices and FIFOs are not regular files and are never refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using fixtures::CliResult;
using fixtures::read_text;
using fixtures::run_simtrain;
using testing::HasSubstr;

constexpr const char* kMegatronLine =
    "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
    "--micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 32000";

class OverwriteRule : public testing::Test {
protected:
  std::string at(const std::string& name) const { return (dir_.path() / name).string(); }
  // A file the user wrote.
  std::string mine(const std::string& name) const {
    std::ofstream(at(name)) << "mine";
    return at(name);
  }
  // `command` with the output `option` at an existing file: refused (exit 2,
  // the file kept); with --force, replaced.
  void expect_refused_then_forced(std::vector<std::string> command, const std::string& option,
                                  const std::string& name) const {
    const CliResult refused = run_simtrain(command);
    EXPECT_EQ(refused.code, 2) << refused.err;
    EXPECT_EQ(refused.err, "simtrain: " + option + " " + at(name) + ": exists (pass --force to replace it)\n");
    EXPECT_EQ(read_text(at(name)), "mine") << option;
    command.push_back("--force");
    const CliResult forced = run_simtrain(command);
    EXPECT_EQ(forced.code, 0) << forced.err;
    EXPECT_NE(read_text(at(name)), "mine") << option;
  }

  fixtures::TemporaryDirectory dir_{"overwrite"};
};

TEST_F(OverwriteRule, SimulateTraceAndReport) {
  expect_refused_then_forced({"simulate", "tiny-4gpu", "--quiet", "--report", mine("report.json")}, "--report",
                             "report.json");
  expect_refused_then_forced({"simulate", "tiny-4gpu", "--quiet", "--trace", mine("trace.json")}, "--trace", "trace.json");
}

TEST_F(OverwriteRule, ScheduleOut) {
  expect_refused_then_forced({"schedule", "tiny-4gpu", "--out", mine("program.json")}, "--out", "program.json");
}

TEST_F(OverwriteRule, TrainTraceAndReport) {
  expect_refused_then_forced({"train", "tiny-4gpu", "--quiet", "--steps", "10", "--report", mine("run.json")}, "--report",
                             "run.json");
  expect_refused_then_forced({"train", "tiny-4gpu", "--quiet", "--steps", "10", "--trace", mine("run-trace.json")},
                             "--trace", "run-trace.json");
}

TEST_F(OverwriteRule, SearchCsvJsonAndSvg) {
  for (const auto& [option, name] : std::vector<std::pair<std::string, std::string>>{
           {"--csv", "table.csv"}, {"--json", "search.json"}, {"--pareto-svg", "front.svg"}})
    expect_refused_then_forced({"search", "tiny-4gpu", "--quiet", "--gpus", "4", option, mine(name)}, option, name);
}

TEST_F(OverwriteRule, FromMegatronOut) {
  expect_refused_then_forced({"from-megatron", kMegatronLine, "--gpu", "H100-SXM", "--topology", "dgx-h100-superpod",
                              "--num-gpus", "8", "--out", mine("scenario.json")},
                             "--out", "scenario.json");
}

TEST_F(OverwriteRule, ExportPlatform) {
  expect_refused_then_forced({"export-platform", "--topology", "dgx-h100-superpod", "--num-gpus", "8", mine("p.xml")}, "OUT",
                             "p.xml");
}

// Any one of its files existing refuses the export, before a file is written.
TEST_F(OverwriteRule, ExportChakraRefusesIfAnyOfItsFilesExists) {
  for (const std::string existing : {"t.0.et", "t.3.et", "t.comm_groups.json"}) {
    fs::remove_all(dir_.path());
    fs::create_directories(dir_.path());
    mine(existing);
    const CliResult refused = run_simtrain({"export-chakra", "tiny-4gpu", at("t")});
    EXPECT_EQ(refused.code, 2) << existing;
    EXPECT_THAT(refused.err, HasSubstr(at(existing) + ": exists (pass --force to replace it)\n"));
    EXPECT_EQ(read_text(at(existing)), "mine");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), 1) << "nothing written";
    const CliResult forced = run_simtrain({"export-chakra", "tiny-4gpu", at("t"), "--force"});
    EXPECT_EQ(forced.code, 0) << forced.err;
    EXPECT_NE(read_text(at(existing)), "mine");
  }
}

// Refused before any kernel is timed: this holds on a machine without a GPU too.
TEST_F(OverwriteRule, ProfileOutIsRefusedBeforeProfiling) {
  const CliResult refused = run_simtrain({"profile", "tiny-4gpu", "--out", mine("profile.json")});
  EXPECT_EQ(refused.code, 2);
  EXPECT_EQ(refused.err, "simtrain: --out " + at("profile.json") + ": exists (pass --force to replace it)\n");
  EXPECT_EQ(read_text(at("profile.json")), "mine");
}

// Refused before the traces are read: any two paths do.
TEST_F(OverwriteRule, CompareJsonAndCalibrate) {
  for (const std::string option : {"--json", "--calibrate"}) {
    const CliResult refused = run_simtrain({"compare", at("sim.json"), at("live.json"), option, mine("out.json")});
    EXPECT_EQ(refused.code, 2);
    EXPECT_EQ(refused.err, "simtrain: " + option + " " + at("out.json") + ": exists (pass --force to replace it)\n");
    EXPECT_EQ(read_text(at("out.json")), "mine");
  }
}

TEST_F(OverwriteRule, ASymbolicLinkToAnExistingFileIsRefused) {
  mine("report.json");
  fs::create_symlink("report.json", at("latest.json"));
  const CliResult refused = run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--report", at("latest.json")});
  EXPECT_EQ(refused.code, 2);
  EXPECT_EQ(refused.err, "simtrain: --report " + at("latest.json") + ": exists (pass --force to replace it)\n");
  EXPECT_EQ(read_text(at("report.json")), "mine");
}

TEST_F(OverwriteRule, StandardOutputDevicesAndFifosAreNotRefused) {
  EXPECT_EQ(run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--report", "-"}).code, 0);
  if (fs::is_character_file("/dev/null"))
    EXPECT_EQ(run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--trace", "/dev/null"}).code, 0);
  const std::string fifo = at("report.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_text(fifo); });
  const CliResult result = run_simtrain({"simulate", "tiny-4gpu", "--quiet", "--report", fifo});
  reader.join();
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(received, HasSubstr("step_time_s"));
}

#ifdef SIMTRAIN_MPIEXEC
// Every rank checks the trace's path before anything runs.
TEST_F(OverwriteRule, LiveTrace) {
  if (const std::string missing = fixtures::mpirun_missing(); !missing.empty()) GTEST_SKIP() << missing;
  const CliResult refused = fixtures::run_mpi_simtrain(4, {"live", "tiny-4gpu", "--trace", mine("live.json")}, dir_.path(), 120);
  EXPECT_NE(refused.code, 0) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("simtrain: --trace " + at("live.json") + ": exists (pass --force to replace it)"));
  EXPECT_EQ(read_text(at("live.json")), "mine");
}
#endif

}  // namespace
}  // namespace simtrain
