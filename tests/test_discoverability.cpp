// What a new user finds without reading the source (issue 39, item 10):
// `simtrain --version`, the built-in scenarios close to a name that is none,
// and `simtrain list` (a table) and `list --json` (every figure).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/base/embedded_files.hpp"
#include "sim/base/json_fields.hpp"
#include "sim/scenario/gpu_spec.hpp"
#include "sim/scenario/topology.hpp"
#include "test_support.hpp"
#include "version.hpp"

namespace simtrain {
namespace {

using fixtures::CliResult;
using fixtures::run_simtrain;
using testing::HasSubstr;

TEST(Version, IsTheProjectVersionAndTheCommitConfigured) {
  const CliResult r = run_simtrain({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, version_text() + "\n");
  EXPECT_THAT(r.out, testing::MatchesRegex("simtrain [0-9]+\\.[0-9]+\\.[0-9]+( \\(git [^)]+\\))?\n"));
  EXPECT_EQ(r.err, "");
}

TEST(ScenarioNames, ANameThatIsNoneNamesTheCloseOnes) {
  const CliResult gpt3 = run_simtrain({"simulate", "gpt3"});
  EXPECT_EQ(gpt3.code, 2);
  EXPECT_EQ(gpt3.err, "simtrain: gpt3: no such file, nor a built-in scenario; did you mean gpt3-175b-1024xh100, "
            "gpt-oss-120b-64xh100?\n");
  EXPECT_EQ(run_simtrain({"train", "tiny-4gpus", "--steps", "1"}).err,
            "simtrain: tiny-4gpus: no such file, nor a built-in scenario; did you mean tiny-4gpu?\n");
  EXPECT_EQ(run_simtrain({"schedule", "scenarios/mixtral.json"}).err,
            "simtrain: scenarios/mixtral.json: no such file, nor a built-in scenario; did you mean mixtral-8x7b-64xh100?\n");
  EXPECT_EQ(run_simtrain({"simulate", "zzzz"}).err,
            "simtrain: zzzz: no such file, nor a built-in scenario (simtrain list names them)\n");
}

TEST(ScenarioNames, CloseNamesContainTheNameOrAreAFewEditsFromIt) {
  const std::vector<std::string> known = {"llama3-405b-16kxh100", "gpt3-175b-1024xh100", "llama3.2-1b-1xh200",
                                          "nemo-llama3-70b-64xh100", "tiny-4gpu"};
  EXPECT_EQ(close_names("LLAMA3", known),
            (std::vector<std::string>{"llama3-405b-16kxh100", "llama3.2-1b-1xh200", "nemo-llama3-70b-64xh100"}));
  EXPECT_EQ(close_names("gtp3", known), std::vector<std::string>{"gpt3-175b-1024xh100"});  // 2 edits from "gpt3"
  EXPECT_EQ(close_names("tiny-4gpus", known), std::vector<std::string>{"tiny-4gpu"});
  EXPECT_EQ(close_names("llama3", known, 2), (std::vector<std::string>{"llama3-405b-16kxh100", "llama3.2-1b-1xh200"}));
  EXPECT_TRUE(close_names("x", known).empty());
}

TEST(List, IsATableOfGpusTopologiesAndScenarios) {
  const CliResult r = run_simtrain({"list"});
  ASSERT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("\nH100-SXM              989        1,979   80 GiB     3,350  132          3.00\n"));
  EXPECT_THAT(r.out, HasSubstr("\ndgx-h100-superpod         fat_tree            8          450  8 x 400 Gb/s NICs per node\n"));
  EXPECT_THAT(r.out, HasSubstr("\ntpu-v5p-torus             torus               1          600  16 x 16 x 24 torus of 100 GB/s links\n"));
  EXPECT_THAT(r.out, HasSubstr("\ngpt3-175b-1024xh100       1,024 x H100-SXM on dgx-h100-superpod\n"));
}

TEST(List, JsonHoldsEveryGpuAsAnInlineSpecAndEveryTopologyAndScenario) {
  const CliResult r = run_simtrain({"list", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json list = nlohmann::json::parse(r.out);
  ASSERT_EQ(list["gpus"].size(), builtin_gpus().size());
  for (size_t i = 0; i < builtin_gpus().size(); ++i) {
    const GpuSpec& expected = builtin_gpus()[i];
    const GpuSpec read = gpu_from_json(list["gpus"][i], "list", "gpus");  // as a scenario's inline GPU
    EXPECT_EQ(read.name, expected.name);
    EXPECT_DOUBLE_EQ(read.peak_bf16_flops, expected.peak_bf16_flops) << expected.name;
    EXPECT_DOUBLE_EQ(read.peak_fp8_flops, expected.peak_fp8_flops) << expected.name;
    EXPECT_DOUBLE_EQ(read.memory_bytes, expected.memory_bytes) << expected.name;
    EXPECT_DOUBLE_EQ(read.hbm_bytes_per_second, expected.hbm_bytes_per_second) << expected.name;
    EXPECT_EQ(read.sm_count, expected.sm_count) << expected.name;
    EXPECT_DOUBLE_EQ(read.tensor_clock_hz, expected.tensor_clock_hz) << expected.name;
    EXPECT_DOUBLE_EQ(read.sustained_tensor_clock_hz, expected.sustained_tensor_clock_hz) << expected.name;
    EXPECT_DOUBLE_EQ(read.sustained_fp8_tensor_clock_hz, expected.sustained_fp8_tensor_clock_hz) << expected.name;
    EXPECT_DOUBLE_EQ(read.achievable_matmul_bf16_flops, expected.achievable_matmul_bf16_flops) << expected.name;
    EXPECT_DOUBLE_EQ(read.achievable_matmul_fp8_flops, expected.achievable_matmul_fp8_flops) << expected.name;
    EXPECT_DOUBLE_EQ(read.rental_usd_per_gpu_hour, expected.rental_usd_per_gpu_hour) << expected.name;
  }
  ASSERT_EQ(list["topologies"].size(), embedded_topologies().size());
  for (const nlohmann::json& topology : list["topologies"]) {
    const std::string name = topology["name"];
    const Topology built_in = topology_from_json(name, "test", "", ".");
    const Topology listed = topology_from_json(topology, "list", "topologies", ".");  // as a scenario's inline topology
    EXPECT_EQ(listed.kind, built_in.kind) << name;
    EXPECT_EQ(listed.gpus_per_node, built_in.gpus_per_node) << name;
    EXPECT_EQ(listed.nvlink_bytes_per_second, built_in.nvlink_bytes_per_second) << name;
    EXPECT_EQ(listed.nic_bytes_per_second, built_in.nic_bytes_per_second) << name;
    EXPECT_EQ(topology["kind"], to_string(built_in.kind)) << name;
  }
  std::set<std::string> scenarios;
  for (const nlohmann::json& scenario : list["scenarios"]) scenarios.insert(scenario["name"].get<std::string>());
  std::set<std::string> embedded;
  for (const EmbeddedFile& file : embedded_scenarios()) embedded.emplace(file.name);
  EXPECT_EQ(scenarios, embedded);
  EXPECT_EQ(list["scenarios"][3], (nlohmann::json{{"name", "gpt3-175b-1024xh100"},
                                                  {"num_gpus", 1024},
                                                  {"gpu", "H100-SXM"},
                                                  {"topology", "dgx-h100-superpod"}}));
}

}  // namespace
}  // namespace simtrain
