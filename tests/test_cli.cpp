#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using simtrain::fixtures::read_json;
using simtrain::fixtures::read_text;
using simtrain::fixtures::CliResult;
using testing::AllOf;
using testing::HasSubstr;

const auto run = simtrain::fixtures::run_simtrain;

// Each test gets a fresh directory for the files it writes.
class CliTest : public testing::Test {
protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Simulates `scenario` twice; the reports and traces must be the same bytes.
  void expect_deterministic(const std::string& scenario) const {
    for (const std::string name : {"a", "b"})
      ASSERT_EQ(run({"simulate", scenario, "--quiet", "--report", path(name + ".report.json"), "--trace",
                     path(name + ".trace.json")})
                    .code,
                0);
    EXPECT_EQ(read_text(path("a.report.json")), read_text(path("b.report.json")));
    EXPECT_EQ(read_text(path("a.trace.json")), read_text(path("b.trace.json")));
  }

  simtrain::fixtures::TemporaryDirectory temporary_{"cli"};
  const fs::path& dir_ = temporary_.path();
};

// Bad input: exit code 2 and one line on stderr naming what is wrong.
void expect_input_error(const CliResult& result, const std::string& text) {
  EXPECT_EQ(result.code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr(text));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_TRUE(result.err.ends_with('\n')) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(Cli, ListsBuiltins) {
  const CliResult r = run({"list"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, AllOf(HasSubstr("H100-SXM"), HasSubstr("A100-80GB"), HasSubstr("dgx-h100-superpod"),
                           HasSubstr("tiny-4gpu"), HasSubstr("gpt3-175b-1024xh100")));
  EXPECT_EQ(r.err, "");
}

TEST(Cli, SubcommandHelpNamesTheSubcommand) {
  const CliResult r = run({"live", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("Usage: simtrain live [OPTIONS] scenario"));
  EXPECT_THAT(r.out, HasSubstr("--inject-fault"));
}

TEST(Cli, ScheduleIsJson) {
  const CliResult r = run({"schedule", "tiny-4gpu"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json program = json::parse(r.out);
  EXPECT_EQ(program["world_size"], 4);
  ASSERT_EQ(program["ranks"].size(), 4u);
  for (const json& rank : program["ranks"]) {
    ASSERT_FALSE(rank["tasks"].empty());
    for (const json& task : rank["tasks"])
      for (const char* key : {"id", "name", "kind", "deps"}) EXPECT_TRUE(task.contains(key)) << key << " in " << task;
  }
}

TEST(Cli, ProfileListsItsKernelsWithoutAGpu) {
  const CliResult alone = run({"profile", "tiny-4gpu", "--list"});
  ASSERT_EQ(alone.code, 0) << alone.err;
  EXPECT_THAT(alone.out, HasSubstr("qkv: gemm "));
  EXPECT_THAT(alone.out, testing::ContainsRegex("\n[0-9]+ kernels to time: [0-9]+ attention [0-9]+ gemm"));
  // A second scenario with the same ops adds none.
  EXPECT_EQ(run({"profile", "tiny-4gpu", "--also", "tiny-4gpu", "--list"}).out, alone.out);
}

TEST(Cli, ProfileNeedsOutOrList) {
  expect_input_error(run({"profile", "tiny-4gpu"}), "--out is required (or --list)");
  EXPECT_NE(run({"profile", "tiny-4gpu", "--list", "--out", "x.json"}).code, 0);
}

TEST(Cli, ExportChakraIntoAMissingFolderIsRefusedNamingTheFile) {
  expect_input_error(run({"export-chakra", "tiny-4gpu", "/nonexistent-simtrain-folder/trace"}),
                     "OUT_PREFIX (rank 0): /nonexistent-simtrain-folder/trace.0.et: no such folder");
}

TEST_F(CliTest, SimulatesExportedChakraTraces) {
  ASSERT_EQ(run({"export-chakra", "tiny-4gpu", path("tiny")}).code, 0);
  const CliResult r = run({"simulate", "--chakra", path("tiny"), "--topology", "dgx-h100-superpod", "--gpu", "H100-SXM",
                           "--quiet", "--report", path("report.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("simtrain: Chakra traces " + path("tiny")), HasSubstr("4 ranks from"),
                           HasSubstr("step time"), testing::Not(HasSubstr("memory per GPU"))));
  const auto report = simtrain::fixtures::read_json(path("report.json"));
  EXPECT_GT(report.at("step_time_s").get<double>(), 0);
  EXPECT_EQ(report.at("stages").size(), 2u);  // tiny-4gpu's two pipeline stages
  EXPECT_TRUE(report.at("memory").is_null());
  // Traces say nothing of tokens or model FLOPs: no throughput or MFU, rather than zeros.
  EXPECT_THAT(r.out, AllOf(testing::Not(HasSubstr("\nthroughput")), testing::Not(HasSubstr("\nMFU")),
                           HasSubstr("TFLOP/s per GPU as recorded (throughput and MFU unknown")));
  for (const char* unknown : {"tokens_per_s", "model_tflops_per_gpu", "mfu"})
    EXPECT_TRUE(report.at(unknown).is_null()) << unknown;
  EXPECT_GT(report.at("hardware_tflops_per_gpu").get<double>(), 0);
}

TEST_F(CliTest, ChakraTracesOnAPlatformFileSayWhatThePlatformChanges) {
  ASSERT_EQ(run({"export-chakra", "tiny-4gpu", path("tiny")}).code, 0);
  const std::string platform = std::string(SIMTRAIN_SOURCE_DIR) + "/tests/data/four-gpus-one-switch.xml";
  const CliResult r = run({"simulate", "--chakra", path("tiny"), "--topology", platform, "--gpu", "H100-SXM", "--quiet",
                           "--report", path("report.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("NOTE"), HasSubstr("SimGrid platform " + platform), HasSubstr("no bundled links")));
  const auto report = simtrain::fixtures::read_json(path("report.json"));
  EXPECT_EQ(report.at("scenario").at("simgrid_platform").at("file"), platform);
}

TEST(Cli, ChakraOptionsAreChecked) {
  EXPECT_EQ(run({"simulate", "--chakra", "t", "--gpu", "H100-SXM"}).code, 2);  // no --topology
  EXPECT_EQ(run({"simulate", "--chakra", "t", "--topology", "dgx-h100-superpod"}).code, 2);  // no --gpu
  EXPECT_EQ(run({"simulate", "--topology", "dgx-h100-superpod"}).code, 2);  // no --chakra
  EXPECT_EQ(run({"simulate", "tiny-4gpu", "--chakra", "t", "--topology", "dgx-h100-superpod", "--gpu", "H100-SXM"}).code,
            2);  // and a scenario
  expect_input_error(run({"simulate", "--chakra", "/nonexistent-simtrain-folder/t", "--topology", "dgx-h100-superpod",
                          "--gpu", "H100-SXM"}),
                     "/nonexistent-simtrain-folder/t.0.et: no such file");
}

TEST_F(CliTest, SimulateWritesReportAndTrace) {
  const CliResult r = run({"simulate", "tiny-4gpu", "--quiet", "--report", path("report.json"), "--trace",
                           path("trace.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("step time"), HasSubstr("MFU"), HasSubstr("pipeline bubble"),
                           HasSubstr("exposed comm"), HasSubstr("memory per GPU"), HasSubstr("fits")));

  const json report = read_json(path("report.json"));
  EXPECT_GT(report["step_time_s"].get<double>(), 0);
  EXPECT_GT(report["mfu"].get<double>(), 0);
  EXPECT_LT(report["mfu"].get<double>(), 1);
  EXPECT_FALSE(report["memory"]["out_of_memory"].get<bool>());
  EXPECT_TRUE(report["bubble"]["definition"].is_string());

  const json trace = read_json(path("trace.json"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::set<std::string> processes, tasks;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") processes.insert(event["args"]["name"]);
    if (event["ph"] == "X") {
      tasks.insert(event["name"]);
      EXPECT_GE(event["dur"].get<double>(), 0) << event;
    }
  }
  EXPECT_EQ(processes, (std::set<std::string>{"rank 0 (tp 0, pp 0, dp 0)", "rank 1 (tp 1, pp 0, dp 0)",
                                               "rank 2 (tp 0, pp 1, dp 0)", "rank 3 (tp 1, pp 1, dp 0)"}));
  for (const char* name : {"s0 F mb0", "s0 B mb7", "s1 F mb0", "s1 B mb7"}) EXPECT_TRUE(tasks.count(name)) << name;
  EXPECT_TRUE(std::any_of(tasks.begin(), tasks.end(), [](const std::string& t) { return t.starts_with("allreduce tp0 "); }));
}

TEST_F(CliTest, SimulateIsDeterministic) { expect_deterministic("tiny-4gpu"); }

// TP, PP and DP all above 1 and interleaved: many actors, streams and flows
// interleave in the replay, with gradient reduction overlapping the backward.
TEST_F(CliTest, SimulateIsDeterministicWithEveryParallelism) {
  json scenario = simtrain::fixtures::scenario_json(2, 2, 2, 8, "interleaved_1f1b", 2, 4);
  scenario["parallelism"]["overlap_grad_reduce"] = true;
  scenario["parallelism"]["zero_stage"] = 1;
  std::ofstream(path("scenario.json")) << scenario.dump();
  expect_deterministic(path("scenario.json"));
}

TEST_F(CliTest, OutOfMemoryVerdict) {
  std::vector<std::string> args = {"simulate", "tiny-4gpu", "--quiet", "--report", path("report.json")};
  for (const char* assignment :
       {"hidden_size=16384", "num_attention_heads=128", "intermediate_size=65536", "num_hidden_layers=8",
        "seq_length=8192", "micro_batch_size=8", "global_batch_size=64", "max_position_embeddings=8192"})
    args.insert(args.end(), {"--set", assignment});
  const CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("OUT OF MEMORY"));
  EXPECT_TRUE(read_json(path("report.json"))["memory"]["out_of_memory"].get<bool>());
}

// Each --set takes one value, so a scenario after it is not taken for an override.
TEST_F(CliTest, SetBeforeTheScenario) {
  const CliResult r = run({"simulate", "--set", "global_batch_size=16", "--set", "micro_batch_size=2", "tiny-4gpu",
                           "--quiet", "--report", path("report.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("simtrain: tiny-4gpu"));
  const json document = read_json(path("report.json"))["scenario_document"];
  EXPECT_EQ(document["training"]["global_batch_size"], 16);
  EXPECT_EQ(document["training"]["micro_batch_size"], 2);
}

TEST_F(CliTest, NonExistentScenarioFile) {
  const CliResult r = run({"simulate", path("missing.json"), "--quiet", "--report", path("report.json")});
  expect_input_error(r, path("missing.json") + ": no such file");
  EXPECT_FALSE(fs::exists(path("report.json")));
}

TEST_F(CliTest, MalformedJson) {
  std::ofstream(path("broken.json")) << "{\"name\": \"broken\",\n \"model\": {\n";
  expect_input_error(run({"simulate", path("broken.json"), "--quiet"}), "malformed JSON");
}

TEST_F(CliTest, DivisibilityErrorIsOneLineAndWritesNothing) {
  json scenario = read_json(fs::path(SIMTRAIN_SOURCE_DIR) / "scenarios/tiny-4gpu.json");
  scenario["parallelism"]["pipeline_model_parallel_size"] = 3;
  std::ofstream(path("scenario.json")) << scenario.dump(2);
  const CliResult r =
      run({"simulate", path("scenario.json"), "--quiet", "--report", path("report.json"), "--trace", path("trace.json")});
  expect_input_error(r, path("scenario.json") + ": parallelism.pipeline_model_parallel_size: must divide");
  EXPECT_FALSE(fs::exists(path("report.json")));
  EXPECT_FALSE(fs::exists(path("trace.json")));
}

TEST(Cli, BadArguments) {
  expect_input_error(run({"simulate", "tiny-4gpu", "--set", "hidden_size"}), "--set hidden_size: expected key=value");
  expect_input_error(run({"simulate", "tiny-4gpu", "--set", "no_such_field=1"}), "no_such_field: unknown field");
  expect_input_error(run({"frobnicate"}), "subcommand");  // CLI11 does not name the word
  expect_input_error(run({"simulate", "tiny-4gpu", "--frobnicate"}), "--frobnicate");
  expect_input_error(run({"simulate", "tiny-4gpu", "--allreduce-algorithm", "star"}), "star");
  expect_input_error(run({"schedule"}), "scenario");
  expect_input_error(run({}), "subcommand");
}

// A pipeline layout Megatron refuses: exit 2, the field and the reason.
TEST(Cli, RefusedPipelineLayouts) {
  expect_input_error(run({"simulate", "tiny-4gpu", "--set", "schedule=interleaved_1f1b", "--set",
                          "num_virtual_stages_per_pipeline_rank=3"}),
                     "tiny-4gpu.json: parallelism.num_virtual_stages_per_pipeline_rank: must divide the layers per "
                     "pipeline stage (4), got 3");
  expect_input_error(run({"simulate", "tiny-4gpu", "--set", "pipeline_model_parallel_size=1", "--set",
                          "decoder_first_pipeline_num_layers=8"}),
                     "parallelism.decoder_first_pipeline_num_layers: needs pipeline_model_parallel_size >= 2, got 1");
  expect_input_error(run({"schedule", "tiny-4gpu", "--set", "pipeline_model_parallel_layout=Et|tttt|ttL"}),
                     "parallelism.pipeline_model_parallel_layout: has 3 stages, not a multiple of "
                     "pipeline_model_parallel_size (2)");
}

// Chunks of unequal layers (1, 3 on rank 0; 2, 2 on rank 1) run through the
// interleaved schedule and the replay.
TEST_F(CliTest, SimulatesAnUnevenInterleavedLayout) {
  const CliResult r = run({"simulate", "tiny-4gpu", "--quiet", "--report", path("report.json"), "--set",
                           "schedule=interleaved_1f1b", "--set", "pipeline_model_parallel_layout=Et|ttt|tt|ttL"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json report = read_json(path("report.json"));
  EXPECT_GT(report["step_time_s"].get<double>(), 0);
  EXPECT_EQ(report["scenario"]["parallelism"]["virtual_stages"], 2) << report["scenario"];
}

TEST_F(CliTest, ReportIsReplacedAtomically) {
  std::ofstream(path("report.json")) << "old";
  ASSERT_EQ(run({"simulate", "tiny-4gpu", "--quiet", "--report", path("report.json"), "--force"}).code, 0);
  EXPECT_TRUE(read_json(path("report.json")).contains("step_time_s"));
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace simtrain
