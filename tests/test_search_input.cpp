// simtrain search refuses what it cannot honour, with exit code 2 and the
// reason: a GPU count, GPU type or --vary value that is not one, or with
// which no configuration of the grid is valid and fits (the grid points
// counted by the rule that refused them), --set and --vary of one field, a
// price of no searched GPU; and it prints no NaN or infinity.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "sim/base/limits.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using testing::HasSubstr;

// tiny-4gpu (8 layers, 16 heads, global batch 8) with everything fixed but
// tensor (1, 2, 4, 8), pipeline (1, 2, 4, 8) and micro-batch size (1, 2, 4):
// 48 grid points per GPU count and type, none the same configuration.
std::vector<std::string> small_search(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"search", "tiny-4gpu", "--quiet", "--set", "recompute_granularity=none",
                                   "--set", "sequence_parallel=false", "--set", "zero_stage=0",
                                   "--set", "schedule=1f1b", "--vary", "virtual_stages=1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The message of a search that must fail with exit code 2.
std::string refusal(const std::vector<std::string>& args) {
  const fixtures::CliResult r = fixtures::run_simtrain(args);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  return r.err;
}

const std::string no_configuration = "no configuration of the grid is valid and fits in memory: ";
const std::string num_gpus_rule = "cluster.num_gpus must be a multiple of tensor x pipeline parallel size";
const std::string batch_rule = "training.global_batch_size must be a multiple of micro_batch_size x data parallel size";

TEST(SearchInput, GpuCountsThatAreNoneAreRefused) {
  EXPECT_EQ(refusal(small_search({"--gpus", "0"})), "simtrain: search: --gpus: must be at least 1 GPU, got 0\n");
  EXPECT_EQ(refusal(small_search({"--gpus", "-8"})), "simtrain: search: --gpus: must be at least 1 GPU, got -8\n");
  EXPECT_EQ(refusal(small_search({"--gpus", ""})), "simtrain: search: --gpus: expected a whole number of GPUs, got ''\n");
  EXPECT_EQ(refusal(small_search({"--gpus", "4,"})), "simtrain: search: --gpus: expected a whole number of GPUs, got ''\n");
  EXPECT_EQ(refusal(small_search({"--gpus", "2.5"})), "simtrain: search: --gpus: expected a whole number of GPUs, got '2.5'\n");
  EXPECT_EQ(refusal(small_search({"--gpus", "four"})), "simtrain: search: --gpus: expected a whole number of GPUs, got 'four'\n");
}

TEST(SearchInput, AGpuCountBeyondTheLimitIsRefusedWithTheLimit) {
  EXPECT_EQ(refusal(small_search({"--gpus", "4,1e8"})),
            "simtrain: search: --gpus: must be at most " + std::to_string(limits::max_gpus) +
                " GPUs (the largest cluster simtrain holds), got 1e8\n");
}

// On 3 GPUs only tensor = pipeline = 1 divides the GPU count (45 points);
// then data parallelism is 3, which divides no global batch of 8 (3 points).
TEST(SearchInput, AGpuCountNoStrategyFitsSaysWhyByRule) {
  const std::string expected = "simtrain: search: --gpus 3: " + no_configuration +
                               "48 grid points: 0 duplicates, 48 invalid (45 " + num_gpus_rule + "; 3 " + batch_rule +
                               "), 0 out of memory\n";
  EXPECT_EQ(refusal(small_search({"--gpus", "3"})), expected);
  EXPECT_EQ(refusal(small_search({"--gpus", "4,3"})), expected);  // a count that works hides none that does not
}

// 0.01 GiB GPUs: of the 48 points on 4 GPUs, 30 do not divide the GPU
// count, 1 not the batch (data parallel 4 x micro-batch 4); the other 17 are
// valid and out of memory.
TEST(SearchInput, AGridOfWhichNothingFitsCountsTheOutOfMemoryToo) {
  const std::string gpu = R"(cluster.gpu={"name": "small", "peak_bf16_tflops": 100, "hbm_GBps": 100, "memory_GiB": 0.01, "sm_count": 132, "tensor_clock_MHz": 1830, "sustained_tensor_clock_MHz": 1649})";
  EXPECT_EQ(refusal(small_search({"--set", gpu})), "simtrain: search: " + no_configuration +
                                                       "48 grid points: 0 duplicates, 31 invalid (30 " + num_gpus_rule +
                                                       "; 1 " + batch_rule + "), 17 out of memory\n");
}

TEST(SearchInput, AnUnknownGpuTypeIsRefusedNamingTheKnownOnes) {
  EXPECT_EQ(refusal(small_search({"--gpu-types", "H100-SXM,H100"})),
            "simtrain: search: --gpu-types: unknown GPU 'H100' (known: A100-80GB, H100-SXM, H200, H800, B200, GB200, MI300X)\n");
  EXPECT_THAT(refusal(small_search({"--gpu-types", ""})), HasSubstr("unknown GPU ''"));
}

TEST(SearchInput, AGpuTypeOnWhichNothingIsValidIsRefused) {
  // The A100 has no fp8: its 17 points that divide the GPU count and the batch are refused for it.
  EXPECT_EQ(refusal(small_search({"--set", "dtype=fp8", "--gpu-types", "H100-SXM,A100-80GB"})),
            "simtrain: search: --gpu-types A100-80GB: " + no_configuration + "48 grid points: 0 duplicates, 48 invalid (30 " +
                num_gpus_rule + "; 17 training.dtype fp8 is not supported by GPU A100-80GB; 1 " + batch_rule +
                "), 0 out of memory\n");
}

TEST(SearchInput, AVaryKeyNoScenarioHasIsAnUnknownField) {
  EXPECT_THAT(refusal(small_search({"--vary", "micro_batch_sise=1,2"})),
              HasSubstr("simtrain: search: --vary micro_batch_sise: unknown field (did you mean 'micro_batch_size'?)"));
}

TEST(SearchInput, AVaryValueWithWhichNothingIsValidIsRefused) {
  // 3 divides no global batch of 8.
  EXPECT_THAT(refusal(small_search({"--vary", "micro_batch_size=1,3"})),
              HasSubstr("search: --vary micro_batch_size=3: " + no_configuration + "16 grid points: 0 duplicates, 16 invalid (10 " +
                        num_gpus_rule + "; 6 " + batch_rule + ")"));
  EXPECT_THAT(refusal(small_search({"--vary", "micro_batch_size=1,many"})),
              HasSubstr("search: --vary micro_batch_size=many: " + no_configuration));
}

TEST(SearchInput, VirtualStagesMustBeWholeNumbers) {
  for (const std::string value : {"0", "-1", "two", "1.5"})
    EXPECT_EQ(refusal({"search", "tiny-4gpu", "--quiet", "--vary", "virtual_stages=1," + value}),
              "simtrain: search: --vary virtual_stages=" + value +
                  ": expected a whole number of model chunks per pipeline rank, from 1 to " +
                  std::to_string(limits::max_layers) + "\n");
}

TEST(SearchInput, OneFieldSetAndVariedIsAConflict) {
  EXPECT_EQ(refusal(small_search({"--set", "training.micro_batch_size=2", "--vary", "training.micro_batch_size=1,2"})),
            "simtrain: search: --vary training.micro_batch_size: conflicts with --set training.micro_batch_size=2\n");
  EXPECT_EQ(refusal(small_search({"--set", "micro_batch_size=2", "--vary", "training.micro_batch_size=1,2"})),
            "simtrain: search: --vary training.micro_batch_size: conflicts with --set micro_batch_size=2\n");
  EXPECT_EQ(refusal(small_search({"--set", "num_gpus=8", "--gpus", "4"})),
            "simtrain: search: --gpus: conflicts with --set num_gpus=8\n");
  EXPECT_EQ(refusal(small_search({"--set", "gpu=H200", "--gpu-types", "H100-SXM"})),
            "simtrain: search: --gpu-types: conflicts with --set gpu=H200\n");
  EXPECT_THAT(refusal(small_search({"--set", "data_parallel_size=1"})),
              HasSubstr("search: --set data_parallel_size=1: the search derives data_parallel_size"));
}

TEST(SearchInput, AFieldVariedTwiceOrAPriceGivenTwiceIsRefused) {
  EXPECT_EQ(refusal(small_search({"--vary", "micro_batch_size=1", "--vary", "micro_batch_size=2"})),
            "simtrain: search: --vary micro_batch_size: given twice; list every value in one --vary\n");
  EXPECT_EQ(refusal(small_search({"--price", "H100-SXM=2", "--price", "H100-SXM=3"})),
            "simtrain: search: --price H100-SXM: given twice\n");
}

TEST(SearchInput, APriceOfNoSearchedGpuIsRefused) {
  EXPECT_EQ(refusal(small_search({"--price", "H200=3"})),
            "simtrain: search: --price H200: is not a GPU type of the search (--gpu-types or --vary cluster.gpu)\n");
}

TEST(SearchInput, ACostBeyondADoubleIsRefused) {
  EXPECT_EQ(refusal(small_search({"--set", "train_tokens=1e12", "--price", "H100-SXM=1e308"})),
            "simtrain: search: the time or cost to train on 4 x H100-SXM is beyond a double's range "
            "(lower training.train_tokens or --price)\n");
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string>& cells = rows.emplace_back();
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  }
  return rows;
}

// Pipeline 2 and micro-batch 1 on 4 GPUs: tensor 1 and 2 are simulated,
// tensor 4 and 8 do not divide the GPU count.
TEST(SearchInput, CostIsAtTheGpusRentalPriceWhereNoneIsGiven) {
  const fixtures::CliResult r = fixtures::run_simtrain(small_search({"--vary", "pipeline_model_parallel_size=2"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cost in USD at $3.00/GPU-hour (H100-SXM)"));
  const Scenario priced = load_scenario("tiny-4gpu");
  EXPECT_TRUE(priced.cluster.default_price);
  EXPECT_DOUBLE_EQ(priced.cluster.price_per_gpu_hour, 3.00);
  const Scenario stated = load_scenario("tiny-4gpu", {"price_per_gpu_hour=2.5"});
  EXPECT_FALSE(stated.cluster.default_price);
  EXPECT_DOUBLE_EQ(stated.cluster.price_per_gpu_hour, 2.5);
  EXPECT_FALSE(load_scenario("tiny-4gpu", {"gpu=H800"}).cluster.default_price);  // no rental price known
}

TEST(SearchInput, CostWithoutPricesIsInGpuHoursAndNeverNanOrInfinite) {
  fixtures::TemporaryDirectory directory("search-input");
  const std::string csv = (directory.path() / "all.csv").string(), json = (directory.path() / "all.json").string(),
                    svg = (directory.path() / "front.svg").string();
  const fixtures::CliResult r =
      // H800: a GPU without a default rental price.
      fixtures::run_simtrain(small_search({"--set", "gpu=H800", "--vary", "pipeline_model_parallel_size=2", "--vary", "micro_batch_size=1",
                                           "--objective", "cost", "--top", "0", "--csv", csv, "--json", json,
                                           "--pareto-svg", svg}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cost in GPU-hours"));
  EXPECT_THAT(r.out, HasSubstr("4 grid points: 0 duplicates, 2 invalid (2 " + num_gpus_rule + "), 0 out of memory"));
  const std::regex not_a_number(R"(\b(nan|inf|infinity)\b)", std::regex::icase);
  for (const std::string& text : {r.out, fixtures::read_text(csv), fixtures::read_text(json), fixtures::read_text(svg)})
    EXPECT_FALSE(std::regex_search(text, not_a_number)) << text;

  const nlohmann::json counts = fixtures::read_json(json)["counts"];
  EXPECT_EQ(counts["invalid_by_rule"], nlohmann::json({{num_gpus_rule, 2}}));
  const auto rows = csv_rows(fixtures::read_text(csv));
  ASSERT_EQ(rows.size(), 3u);
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), name) - rows[0].begin());
  };
  for (size_t i = 1; i < rows.size(); ++i) {  // GPU-hours: each GPU at 1 an hour
    EXPECT_EQ(rows[i].at(column("cost_unit")), "GPU-hours");
    const double hours = std::stod(rows[i].at(column("seconds_to_train"))) / 3600;
    EXPECT_NEAR(std::stod(rows[i].at(column("cost"))), 4 * hours, 4 * hours * 1e-8);
  }
}

}  // namespace
}  // namespace simtrain
