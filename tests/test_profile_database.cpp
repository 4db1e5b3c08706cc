#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "sim/base/input_error.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/profile_database.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using nlohmann::json;
using testing::HasSubstr;

// A small hand-written database (not measured: the times are round numbers
// chosen to make the expected results easy to check).
json database_json() {
  auto entry = [](const std::string& op, const std::string& op_class, std::vector<int64_t> shape, double flops,
                  double bytes, double seconds) {
    return json{{"op", op},       {"op_class", op_class},       {"shape", shape},
                {"dtype", "bf16"}, {"flops", flops},             {"bytes", bytes},
                {"median_seconds", seconds}, {"p10_seconds", seconds * 0.9}, {"p90_seconds", seconds * 1.1},
                {"repetitions", 10}};
  };
  const double g = 1024;
  return {{"format", "simtrain-kernel-profile"},
          {"version", 1},
          {"device", {{"name", "NVIDIA H100 80GB HBM3"}, {"sm_count", 132}}},
          {"measured_at", "hand-written for the tests"},
          {"entries",
           {entry("qkv", "gemm", {1024, 1024, 1024}, 2 * g * g * g, 6 * g * g, 1e-4),
            entry("gemm", "gemm", {2048, 2048, 2048}, 16 * g * g * g, 24 * g * g, 1e-3),
            entry("ln1", "memory_bound", {1 << 20}, 0, 4 << 20, 2e-5),
            entry("attn", "attention", {1, 8, 1024, 64}, 2147483648.0, 4194304, 5e-4)}}};
}

Op gemm_op(const std::string& name, int64_t m, int64_t n, int64_t k) {
  return {name, OpClass::gemm, {m, n, k}, 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n)};
}

const GpuSpec& h100() { return builtin_gpus()[1]; }

ProfiledCostModel model() { return ProfiledCostModel(parse_profile_database(database_json(), "db.json"), h100()); }

TEST(SameGpu, MatchesCudaNamesToSimtrainNames) {
  EXPECT_TRUE(same_gpu("NVIDIA H100 80GB HBM3", "H100-SXM"));
  EXPECT_TRUE(same_gpu("NVIDIA H100 80GB HBM3", "h100"));
  EXPECT_TRUE(same_gpu("NVIDIA A100-SXM4-80GB", "A100-80GB"));
  EXPECT_TRUE(same_gpu("NVIDIA H200", "H200"));
  EXPECT_TRUE(same_gpu("My GPU", "my-gpu"));  // no model word: the whole names

  EXPECT_FALSE(same_gpu("NVIDIA H100 PCIe", "H100-SXM"));  // form factors differ
  EXPECT_FALSE(same_gpu("NVIDIA H100 NVL", "H100-SXM"));
  EXPECT_FALSE(same_gpu("NVIDIA A100-SXM4-40GB", "A100-80GB"));  // memory sizes differ
  EXPECT_FALSE(same_gpu("NVIDIA H200", "H100-SXM"));
  EXPECT_FALSE(same_gpu("NVIDIA H100 80GB HBM3", "custom"));
}

TEST(ProfileDatabase, ReadsEveryField) {
  const ProfileDatabase db = parse_profile_database(database_json(), "db.json");
  EXPECT_EQ(db.source, "db.json");
  EXPECT_EQ(db.device_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(db.entries.size(), 4u);
  const ProfileEntry& ln1 = db.entries[2];
  EXPECT_EQ(ln1.op.name, "ln1");
  EXPECT_EQ(ln1.op.op_class, OpClass::memory_bound);
  EXPECT_EQ(ln1.op.shape, std::vector<int64_t>{1 << 20});
  EXPECT_EQ(ln1.dtype, Dtype::bf16);
  EXPECT_DOUBLE_EQ(ln1.op.bytes, 4 << 20);
  EXPECT_DOUBLE_EQ(ln1.median_seconds, 2e-5);
  EXPECT_DOUBLE_EQ(ln1.p90_seconds, 2.2e-5);
  EXPECT_EQ(ln1.repetitions, 10);
}

// An fp8 GEMM entry is a linear with fp8 operands (the only GEMMs the
// profiler times in fp8), so the roofline fallback and the profiled model
// treat it as the simulator's fp8 linears.
TEST(ProfileDatabase, AnFp8GemmHasFp8Operands) {
  json document = database_json();
  document["entries"][0]["dtype"] = "fp8";
  document["entries"][2]["dtype"] = "fp8";
  const ProfileDatabase db = parse_profile_database(document, "db.json");
  EXPECT_TRUE(db.entries[0].op.low_precision_operands);
  EXPECT_FALSE(db.entries[1].op.low_precision_operands);  // a bf16 GEMM
  EXPECT_FALSE(db.entries[2].op.low_precision_operands);  // not a GEMM
  Op fp8_linear = gemm_op("qkv", 1024, 1024, 1024);
  fp8_linear.low_precision_operands = true;
  const ProfiledCostModel model(db, h100());
  EXPECT_EQ(model.op_time(fp8_linear, Dtype::fp8).source, TimeSource::measured);
  EXPECT_EQ(model.op_time(gemm_op("qkv", 1024, 1024, 1024), Dtype::fp8).source, TimeSource::scaled);  // bf16 GEMM
}

// An attention gradient entry executes what the workload's does (the
// recomputed scores beyond Megatron's count), so the roofline times it alike.
TEST(ProfileDatabase, AnAttentionGradientRecomputesTheScores) {
  const Workload workload = build_workload(load_scenario("tiny-4gpu"));
  const std::vector<Op>& backward = workload.layer.backward_input.ops;
  const auto gradient = std::ranges::find(backward, "attn_grad", &Op::name);
  ASSERT_NE(gradient, backward.end());
  ASSERT_GT(gradient->uncounted_flops, 0);
  json document = database_json();
  document["entries"][3] = to_json(ProfileEntry{*gradient, Dtype::bf16, "test", 1e-3, 1e-3, 1e-3, 10});
  const ProfileDatabase db = parse_profile_database(document, "db.json");
  const Op& read = db.entries[3].op;
  EXPECT_DOUBLE_EQ(read.uncounted_flops, gradient->uncounted_flops);
  EXPECT_DOUBLE_EQ(RooflineModel(h100()).op_time(read, Dtype::bf16).seconds,
                   RooflineModel(h100()).op_time(*gradient, Dtype::bf16).seconds);
  EXPECT_EQ(parse_profile_database(database_json(), "db.json").entries[3].op.uncounted_flops, 0);  // a forward
}

TEST(ProfileDatabase, WhatTheProfilerWritesReadsBack) {
  json document = database_json();
  const ProfileDatabase db = parse_profile_database(document, "db.json");
  document["entries"] = json::array();
  for (const ProfileEntry& entry : db.entries) document["entries"].push_back(to_json(entry));
  const ProfileDatabase again = parse_profile_database(document, "db.json");
  ASSERT_EQ(again.entries.size(), db.entries.size());
  for (size_t i = 0; i < db.entries.size(); ++i) EXPECT_EQ(to_json(again.entries[i]), to_json(db.entries[i]));
}

struct BadDatabase {
  std::string label;
  std::function<void(json&)> change;
  std::string message;
};

const BadDatabase bad_databases[] = {
    {"NotAnObject", [](json& d) { d = json::array(); }, "db.json: expected a JSON object, got array"},
    {"NoFormat", [](json& d) { d.erase("format"); }, "db.json: format: missing (not a simtrain kernel profile)"},
    {"ScenarioGivenByMistake", [](json& d) { d["format"] = "scenario"; },
     "db.json: format: 'scenario' is not simtrain-kernel-profile"},
    {"FutureVersion", [](json& d) { d["version"] = 2; }, "db.json: version: 2 is not supported"},
    {"NoDeviceName", [](json& d) { d["device"].erase("name"); }, "db.json: device.name: missing"},
    {"NoEntries", [](json& d) { d["entries"] = json::array(); }, "db.json: entries: empty: nothing was measured"},
    {"MissingMedian", [](json& d) { d["entries"][1].erase("median_seconds"); },
     "db.json: entries[1].median_seconds: missing"},
    {"NegativeTime", [](json& d) { d["entries"][2]["median_seconds"] = -1e-5; },
     "db.json: entries[2].median_seconds: must be a positive time, got -1e-05"},
    {"ZeroTime", [](json& d) { d["entries"][0]["median_seconds"] = 0; },
     "db.json: entries[0].median_seconds: must be a positive time, got 0"},
    {"NegativeSpread", [](json& d) { d["entries"][0]["p10_seconds"] = -1; },
     "db.json: entries[0].p10_seconds: must be a positive time, got -1"},
    {"SpreadBelowMedian", [](json& d) { d["entries"][0]["p90_seconds"] = 1e-6; },
     "db.json: entries[0].p90_seconds: is below median_seconds"},
    {"TimeIsText", [](json& d) { d["entries"][0]["median_seconds"] = "fast"; },
     "db.json: entries[0].median_seconds: expected a number"},
    {"NoShape", [](json& d) { d["entries"][3].erase("shape"); }, "db.json: entries[3].shape: missing"},
    {"BadShape", [](json& d) { d["entries"][3]["shape"] = {1, 0}; },
     "db.json: entries[3].shape: expected a non-empty array of positive integers, got [1,0]"},
    {"UnknownDtype", [](json& d) { d["entries"][0]["dtype"] = "fp4"; },
     "db.json: entries[0].dtype: 'fp4' is not one of: bf16, fp16, fp8"},
    {"UnknownClass", [](json& d) { d["entries"][0]["op_class"] = "conv"; },
     "db.json: entries[0].op_class: 'conv' is not one of: gemm, attention, memory_bound, optimizer"},
    {"GemmWithoutFlops", [](json& d) { d["entries"][0]["flops"] = 0; },
     "db.json: entries[0].flops: must be positive for a gemm op"},
    {"MistypedField", [](json& d) { d["entries"][0]["median_second"] = 1; },
     "db.json: entries[0].median_second: unknown field (did you mean 'median_seconds'?)"},
};

class BadDatabaseTest : public testing::TestWithParam<BadDatabase> {};

TEST_P(BadDatabaseTest, IsRefusedNamingFileFieldAndReason) {
  json document = database_json();
  GetParam().change(document);
  try {
    parse_profile_database(document, "db.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(GetParam().message));
  }
}

INSTANTIATE_TEST_SUITE_P(ProfileDatabase, BadDatabaseTest, testing::ValuesIn(bad_databases),
                         [](const testing::TestParamInfo<BadDatabase>& info) { return info.param.label; });

TEST(ProfileDatabase, MalformedJsonFileIsRefusedNamingTheFile) {
  fixtures::TemporaryDirectory dir("profile");
  const std::string path = (dir.path() / "db.json").string();
  std::ofstream(path) << R"({"format": "simtrain-kernel-profile", )";
  try {
    load_profile_database(path);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ": malformed JSON"));
  }
}

TEST(ProfiledCostModel, SameShapeIsMeasured) {
  const OpTime t = model().op_time(gemm_op("qkv", 1024, 1024, 1024), Dtype::bf16);
  EXPECT_EQ(t.source, TimeSource::measured);
  EXPECT_DOUBLE_EQ(t.seconds, 1e-4);
}

TEST(ProfiledCostModel, AnyGemmOfTheSameShapeIsMeasured) {
  const OpTime t = model().op_time(gemm_op("fc1_wgrad", 2048, 2048, 2048), Dtype::bf16);
  EXPECT_EQ(t.source, TimeSource::measured);
  EXPECT_DOUBLE_EQ(t.seconds, 1e-3);
}

TEST(ProfiledCostModel, OtherShapesAreScaledFromTheNearestByFlops) {
  // {1024,1024,2048} is ln 2 from the 1024^3 entry and 2 ln 2 from the 2048^3 one.
  const OpTime near_small = model().op_time(gemm_op("proj", 1024, 1024, 2048), Dtype::bf16);
  EXPECT_EQ(near_small.source, TimeSource::scaled);
  EXPECT_DOUBLE_EQ(near_small.seconds, 2e-4);
  const OpTime near_large = model().op_time(gemm_op("fc2", 2048, 2048, 4096), Dtype::bf16);
  EXPECT_EQ(near_large.source, TimeSource::scaled);
  EXPECT_DOUBLE_EQ(near_large.seconds, 2e-3);
}

TEST(ProfiledCostModel, MemoryBoundOpsScaleByBytes) {
  const Op ln1{"ln1", OpClass::memory_bound, {1 << 22}, 0, 16 << 20};
  const OpTime t = model().op_time(ln1, Dtype::bf16);
  EXPECT_EQ(t.source, TimeSource::scaled);
  EXPECT_DOUBLE_EQ(t.seconds, 8e-5);
}

TEST(ProfiledCostModel, AttentionScalesByFlops) {
  const Op attn{"attn", OpClass::attention, {1, 8, 2048, 64}, 4 * 2147483648.0, 8388608};
  const OpTime t = model().op_time(attn, Dtype::bf16);
  EXPECT_EQ(t.source, TimeSource::scaled);
  // 4x the measured entry's FLOPs, at the efficiency of its own shape over the entry's (attention_efficiency.hpp).
  const Op measured{"attn", OpClass::attention, {1, 8, 1024, 64}, 2147483648.0, 4194304};
  const RooflineEfficiency e;
  EXPECT_DOUBLE_EQ(t.seconds, 4 * 5e-4 * e.attention(h100(), measured) / e.attention(h100(), attn));
}

TEST(ProfiledCostModel, UnmeasuredOpsAndDtypesFallBackToTheRoofline) {
  const RooflineModel roofline(h100());
  const Op ln2{"ln2", OpClass::memory_bound, {1 << 20}, 0, 4 << 20};  // only ln1 was measured
  const Op qkv = gemm_op("qkv", 1024, 1024, 1024);
  for (const auto& [op, dtype] : {std::pair{ln2, Dtype::bf16}, std::pair{qkv, Dtype::fp16}}) {
    const OpTime t = model().op_time(op, dtype);
    EXPECT_EQ(t.source, TimeSource::roofline) << op.name;
    EXPECT_DOUBLE_EQ(t.seconds, roofline.op_time(op, dtype).seconds) << op.name;
  }
}

// tiny-4gpu on H100, with cluster.kernel_profile pointing at `database` (written beside the scenario).
class KernelProfileScenario : public testing::Test {
protected:
  Scenario load(const json& database, const std::string& gpu = "H100-SXM") {
    std::ofstream(dir_.path() / "h100.json") << database.dump();
    json scenario = fixtures::read_json(std::filesystem::path(SIMTRAIN_SOURCE_DIR) / "scenarios/tiny-4gpu.json");
    scenario["cluster"]["gpu"] = gpu;
    scenario["cluster"]["kernel_profile"] = "h100.json";
    std::ofstream(dir_.path() / "scenario.json") << scenario.dump();
    return load_scenario((dir_.path() / "scenario.json").string());
  }
  fixtures::TemporaryDirectory dir_{"kernel-profile"};
};

TEST_F(KernelProfileScenario, PathIsRelativeToTheScenario) {
  const Scenario s = load(database_json());
  EXPECT_EQ(s.cluster.kernel_profile, (dir_.path() / "h100.json").string());
  EXPECT_EQ(make_cost_model(s)->op_time(gemm_op("qkv", 1024, 1024, 1024), Dtype::bf16).source, TimeSource::measured);
}

TEST_F(KernelProfileScenario, MissingFileIsRefused) {
  load(database_json());
  try {
    load_scenario((dir_.path() / "scenario.json").string(), {"kernel_profile=elsewhere.json"});
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("scenario.json: cluster.kernel_profile: no such file: "));
    EXPECT_THAT(e.what(), HasSubstr("elsewhere.json"));
  }
}

TEST_F(KernelProfileScenario, DatabaseOfAnotherGpuIsRefused) {
  const Scenario s = load(database_json(), "A100-80GB");
  try {
    make_cost_model(s);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("h100.json: device.name: measured on 'NVIDIA H100 80GB HBM3', but the "
                                    "scenario's cluster.gpu is 'A100-80GB'"));
  }
}

TEST_F(KernelProfileScenario, ReportCountsTheSourceOfEveryOp) {
  // Entries for two ops of tiny-4gpu (tp 2), at their shapes: the layer's qkv GEMM and its ln1.
  json database = database_json();
  database["entries"] = {
      {{"op", "qkv"}, {"op_class", "gemm"}, {"shape", {1024, 1536, 1024}}, {"dtype", "bf16"}, {"flops", 3221225472.0},
       {"bytes", 8388608}, {"median_seconds", 1e-5}},
      {{"op", "ln1"}, {"op_class", "memory_bound"}, {"shape", {1 << 20}}, {"dtype", "bf16"}, {"flops", 0},
       {"bytes", 4 << 20}, {"median_seconds", 4e-6}}};
  const Simulation sim = simulate(load(database));
  const auto& sources = sim.report.time_sources;
  EXPECT_GT(sources.at("gemm").at("measured"), 0);
  EXPECT_GT(sources.at("gemm").at("scaled"), 0);
  EXPECT_EQ(sources.at("gemm").count("roofline"), 0u);  // every GEMM has a nearest GEMM
  EXPECT_GT(sources.at("memory_bound").at("measured"), 0);
  EXPECT_GT(sources.at("memory_bound").at("roofline"), 0);
  EXPECT_EQ(sources.at("attention").count("measured") + sources.at("attention").count("scaled"), 0u);
}

TEST(MakeCostModel, WithoutAProfileTheRooflineIsUsed) {
  json scenario = fixtures::read_json(std::filesystem::path(SIMTRAIN_SOURCE_DIR) / "scenarios/tiny-4gpu.json");
  // A GPU no built-in profile can have been measured on.
  scenario["cluster"]["gpu"] = {{"name", "Test GPU"}, {"peak_bf16_tflops", 100}, {"hbm_GBps", 1000}, {"memory_GiB", 80},
                               {"sm_count", 132},        {"tensor_clock_MHz", 1830}, {"sustained_tensor_clock_MHz", 1649}};
  const Scenario s = fixtures::scenario_from(scenario);
  EXPECT_EQ(make_cost_model(s)->op_time(gemm_op("qkv", 1024, 1024, 1024), Dtype::bf16).source, TimeSource::roofline);
}

// With a GPU the database is written; without one (this machine, CI) the
// profiler says why and writes nothing.
TEST(ProfileCommand, WritesADatabaseOrSaysWhyNot) {
  fixtures::TemporaryDirectory dir("profile-command");
  const std::string out = (dir.path() / "db.json").string();  // an output's folder must exist (output_files.hpp)
  const char* argv[] = {"simtrain", "profile", "tiny-4gpu", "--out", out.c_str()};
  std::ostringstream stdout_text, stderr_text;
  const int code = run_cli(5, argv, stdout_text, stderr_text);
  if (code == 0) {
    EXPECT_EQ(load_profile_database(out).source, out);
    return;
  }
  EXPECT_EQ(code, 1) << stderr_text.str();
  EXPECT_THAT(stderr_text.str(),
              testing::AnyOf(HasSubstr("simtrain: error: no CUDA device: "),
                             HasSubstr("simtrain: error: this simtrain was built without the CUDA kernels")));
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace simtrain
