// `simtrain train` end to end: how many steps and tokens a budget buys, the
// budgets it refuses, the GPU/fabric mismatch it warns of, what it assumes
// where the user says nothing (Ctrl-C: tests/test_interrupt.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/base/text_format.hpp"
#include "sim/longrun/train.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using testing::ContainsRegex;
using testing::HasSubstr;
using testing::Not;

constexpr double tiny_tokens_per_step = 8 * 1024;  // tiny-4gpu: global_batch_size x seq_length

struct TrainOutput {
  fixtures::CliResult cli;
  nlohmann::json report;
};

// `simtrain train args... --report file`: what it printed and the report.
TrainOutput train(std::vector<std::string> args) {
  const fixtures::TemporaryDirectory dir{"train"};
  const std::string report = (dir.path() / "report.json").string();
  args.insert(args.begin(), "train");
  args.insert(args.end(), {"--quiet", "--report", report});
  TrainOutput result{fixtures::run_simtrain(args), nullptr};
  if (std::filesystem::exists(report)) result.report = fixtures::read_json(report);
  return result;
}

void expect_no_impossible_figure(const std::string& text) {
  EXPECT_THAT(text, Not(HasSubstr("nan")));
  EXPECT_THAT(text, Not(HasSubstr("inf")));
  EXPECT_THAT(text, Not(HasSubstr("e+")));  // no int64 or double overflow printed as a count
}

TEST(TrainCommand, WithoutFailuresADayTrainsEveryStepThatFitsAtFullGoodput) {
  const TrainOutput t = train({"tiny-4gpu", "--days", "1", "--no-failures"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  const nlohmann::json& j = t.report;
  // No failure can stop the job: no checkpoints, so the day holds floor(86400 s / step time) steps.
  EXPECT_EQ(j["checkpoint"]["every_steps"], 0);
  const double steps = std::floor(86400 / j["step_time_s"].get<double>());
  EXPECT_GT(steps, 1e6);
  EXPECT_EQ(j["steps"].get<double>(), steps);
  EXPECT_EQ(j["steps_done"]["mean"].get<double>(), steps);
  EXPECT_EQ(j["tokens_per_step"].get<double>(), tiny_tokens_per_step);
  EXPECT_EQ(j["tokens_done"]["mean"].get<double>(), steps * tiny_tokens_per_step);
  EXPECT_EQ(j["goodput"]["mean"].get<double>(), 1.0);
  EXPECT_EQ(j["wall_time_s"]["mean"].get<double>(), steps * j["step_time_s"].get<double>());
  EXPECT_EQ(j["wall_limit_s"].get<double>(), 86400);
  // The text says the same.
  const std::string& out = t.cli.out;
  EXPECT_THAT(out, HasSubstr(with_commas(steps) + " (" + with_commas(steps * tiny_tokens_per_step) +
                             " tokens) at most: all that fit in 1 day without failures"));
  // Nothing fails, so every run would be the same: one run, one figure each, no percentiles.
  EXPECT_EQ(j["runs"], 1);
  EXPECT_THAT(out, HasSubstr("trained               " + with_commas(steps) + " steps, " +
                             with_commas(steps * tiny_tokens_per_step) + " tokens, in 1 day (1 run)"));
  EXPECT_THAT(out, HasSubstr("goodput               100.0 %  (useful training time / wall time)"));
  EXPECT_THAT(out, HasSubstr("failure rates         none (--no-failures)"));
  EXPECT_THAT(out, Not(HasSubstr("p10")));
  EXPECT_THAT(out, HasSubstr("none: no failure can stop the job"));
  EXPECT_THAT(out, Not(HasSubstr("time to train")));  // the day is given, not found
  expect_no_impossible_figure(out);
}

TEST(TrainCommand, ADayWithCheckpointsFitsTheStepsAndTheirWrites) {
  const TrainOutput t = train({"tiny-4gpu", "--days", "1", "--no-failures", "--set", "checkpoint.every_steps=100000"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  const nlohmann::json& j = t.report;
  const double step = j["step_time_s"].get<double>(), write = j["checkpoint"]["write_s"].get<double>();
  ASSERT_GT(write, 0);
  // The most steps n with n steps and ceil(n / 100000) writes within the day.
  auto fits = [&](double n) { return n * step + std::ceil(n / 100000) * write <= 86400; };
  const double n = j["steps_done"]["mean"].get<double>();
  EXPECT_TRUE(fits(n));
  EXPECT_FALSE(fits(n + 1));
  EXPECT_EQ(j["steps"].get<double>(), n);
  EXPECT_NEAR(j["lost_s"]["checkpoint_writes"].get<double>(), std::ceil(n / 100000) * write, 1e-9);
  EXPECT_LT(j["goodput"]["mean"].get<double>(), 1);  // the writes are not training
  EXPECT_THAT(t.cli.out, HasSubstr("trained               " + with_commas(n) + " steps, "));
}

TEST(TrainCommand, ATokenBudgetWithoutFailuresTakesItsStepsAlone) {
  const TrainOutput t = train({"tiny-4gpu", "--tokens", "1e6", "--no-failures"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  const nlohmann::json& j = t.report;
  EXPECT_EQ(j["steps"], 123);  // ceil(1e6 / 8192)
  EXPECT_EQ(j["tokens_done"]["mean"].get<double>(), 123 * tiny_tokens_per_step);
  EXPECT_EQ(j["wall_time_s"]["mean"].get<double>(), 123 * j["step_time_s"].get<double>());
  EXPECT_EQ(j["goodput"]["mean"].get<double>(), 1.0);
  EXPECT_TRUE(j["wall_limit_s"].is_null());
  EXPECT_THAT(t.cli.out, HasSubstr("steps                 123 (1,007,616 tokens) from --tokens"));
  EXPECT_THAT(t.cli.out, HasSubstr("time to train"));
  expect_no_impossible_figure(t.cli.out);
}

TEST(TrainCommand, WarnsOfAGpuOnASystemBuiltForAnother) {
  const TrainOutput t = train({"tiny-4gpu", "--steps", "10", "--set", "cluster.gpu=A100-80GB"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  EXPECT_THAT(t.cli.err, HasSubstr("simtrain: warning: GPU A100-80GB on topology dgx-h100-superpod built for "
                                   "H100-SXM, H200: NVLink figures of the topology kept"));
  EXPECT_THAT(train({"tiny-4gpu", "--steps", "10"}).cli.err, Not(HasSubstr("warning")));
}

// The error of `train args...`, which must be refused with exit code 2, printing and writing nothing.
std::string refusal(const std::vector<std::string>& args) {
  const TrainOutput t = train(args);
  EXPECT_EQ(t.cli.code, 2) << t.cli.out;
  EXPECT_EQ(t.cli.out, "");
  EXPECT_TRUE(t.report.is_null());
  return t.cli.err;
}

TEST(TrainCommand, RefusesBudgetsBeyondWhatCanBeSimulated) {
  const std::string at_most = "; at most 1e+09 steps and failures can be simulated, all runs together";
  EXPECT_THAT(refusal({"tiny-4gpu", "--tokens", "1e30"}),
              HasSubstr("train: --tokens: 1e+30 tokens (1.22e+26 steps)" + at_most));
  EXPECT_THAT(refusal({"tiny-4gpu", "--tokens", "1e19"}),
              HasSubstr("train: --tokens: 1e+19 tokens (1.22e+15 steps)" + at_most));
  EXPECT_THAT(refusal({"tiny-4gpu", "--steps", "9000000000000000000"}),
              HasSubstr("train: --steps: 9000000000000000000 steps" + at_most));
  EXPECT_THAT(refusal({"tiny-4gpu", "--set", "training.train_tokens=1e30"}),
              HasSubstr("scenarios/tiny-4gpu.json: training.train_tokens: 1e+30 tokens (1.22e+26 steps)" + at_most));
  // The step time is the simulation's (about 10 ms): the message gives it and the steps it makes of the days.
  EXPECT_THAT(refusal({"tiny-4gpu", "--days", "1e9"}),
              ContainsRegex("train: --days: 1e\\+09 days \\([0-9.]+e\\+15 steps of 0\\.01[0-9]+ s\\); at most 1e\\+09"));
  EXPECT_THAT(refusal({"tiny-4gpu", "--steps", "10000000", "--runs", "101"}),
              HasSubstr("train: --runs: 10000000 steps; 1.01e+09 for 101 runs" + at_most));
  // A GPU failing every 0.36 s (0.09 s for the four): 1000 steps of 10 ms and a write never pass without one.
  const std::string failing = refusal({"tiny-4gpu", "--steps", "1000", "--set", "reliability.gpu_mtbf_hours=0.0001",
                                        "--set", "checkpoint.every_steps=1000"});
  EXPECT_THAT(failing, HasSubstr("train: --steps: 1000 steps, or about "));
  EXPECT_THAT(failing, HasSubstr("e+5"));  // 1000 steps x exp(10 s / 0.09 s) tries of their interval: some 1e51
  EXPECT_THAT(failing, HasSubstr(" simulated steps and failures with the work failures throw away" + at_most));
}

TEST(TrainCommand, RefusesADayTooShortForAStep) {
  EXPECT_THAT(refusal({"tiny-4gpu", "--days", "1e-9"}),
              ContainsRegex("train: --days: 1e-09 days do not hold one step of 0\\.01[0-9]+ s"));
  EXPECT_EQ(train({"tiny-4gpu", "--days", "inf"}).cli.code, 2);
}

// Where the user says nothing: failure rates published for a real large run,
// enough runs for percentiles, and no figure for a job that cannot run.
TEST(TrainDefaults, AScenarioWithoutFailureRatesFailsAtLlama3sOverTwentyRuns) {
  const TrainOutput t = train({"tiny-4gpu", "--tokens", "1e9"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  const nlohmann::json& j = t.report;
  EXPECT_EQ(j["runs"], default_runs);
  EXPECT_THAT(j["failure_rates"]["source"].get<std::string>(), HasSubstr("Llama 3 405B's"));
  EXPECT_DOUBLE_EQ(j["failure_rates"]["gpu_mtbf_hours"].get<double>(), 16384.0 * 54 * 24 / 268);
  EXPECT_GT(j["job_stopping_mtbf_s"].get<double>(), 0);
  EXPECT_THAT(t.cli.out, HasSubstr("failure rates         Llama 3 405B's"));
  EXPECT_THAT(t.cli.out, HasSubstr(" over 20 runs"));
  EXPECT_THAT(t.cli.out, HasSubstr("(p10 "));
}

TEST(TrainDefaults, NoFailuresIsTheIdealRunInOneFigure) {
  const TrainOutput t = train({"tiny-4gpu", "--tokens", "1e9", "--no-failures"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  EXPECT_EQ(t.report["runs"], 1);
  EXPECT_EQ(t.report["goodput"]["mean"].get<double>(), 1.0);
  EXPECT_EQ(t.report["job_stopping_mtbf_s"].get<double>(), 0);
  EXPECT_THAT(t.cli.out, HasSubstr("failure rates         none (--no-failures)"));
  EXPECT_THAT(t.cli.out, Not(HasSubstr("p10")));
  // --no-failures also silences the rates a scenario states.
  const TrainOutput stated =
      train({"tiny-4gpu", "--steps", "1000", "--no-failures", "--set", "reliability.gpu_mtbf_hours=50000"});
  ASSERT_EQ(stated.cli.code, 0) << stated.cli.err;
  EXPECT_EQ(stated.report["failure_rates"]["gpu_mtbf_hours"].get<double>(), 0);
}

TEST(TrainDefaults, TheScenariosOwnRatesAreKept) {
  const TrainOutput t = train({"tiny-4gpu", "--steps", "1000", "--set", "reliability.gpu_mtbf_hours=50000"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  EXPECT_EQ(t.report["failure_rates"]["gpu_mtbf_hours"].get<double>(), 50000);
  EXPECT_EQ(t.report["failure_rates"]["node_mtbf_hours"].get<double>(), 0);  // unstated: never fails
  EXPECT_THAT(t.cli.out, HasSubstr("failure rates         the scenario's (scenarios/tiny-4gpu.json: reliability)"));
}

TEST(TrainDefaults, AJobThatDoesNotFitInMemoryHasNoTimeOrCost) {
  const std::vector<std::string> oom = {"gpt3-175b-1024xh100", "--steps", "100", "--set", "micro_batch_size=16",
                                        "--set", "recompute_granularity=none"};
  const TrainOutput refused = train(oom);
  EXPECT_EQ(refused.cli.code, 2);
  EXPECT_EQ(refused.cli.out, "");
  EXPECT_TRUE(refused.report.is_null());
  // Reserve included: 3.8 GiB a process holds beyond tensors (docs/memory.md).
  EXPECT_EQ(refused.cli.err,
            "simtrain: scenarios/gpt3-175b-1024xh100.json: does not fit in memory: 136.3 GiB of 80 GiB per GPU at "
            "pipeline stage 0 (simtrain simulate shows what it holds); a job that cannot run has no time to train or "
            "cost (--ignore-memory prices it anyway)\n");
  std::vector<std::string> anyway = oom;
  anyway.push_back("--ignore-memory");
  anyway.push_back("--no-failures");
  const TrainOutput priced = train(anyway);
  ASSERT_EQ(priced.cli.code, 0) << priced.cli.err;
  EXPECT_THAT(priced.cli.out, HasSubstr("memory per GPU        136.3 GiB of 80 GiB  OUT OF MEMORY, priced anyway"));
  EXPECT_TRUE(priced.report["memory"]["out_of_memory"].get<bool>());
}

TEST(TrainDefaults, CostsPrintWithThousandsSeparators) {
  const TrainOutput t = train({"tiny-4gpu", "--days", "30", "--no-failures", "--set", "cluster.price_per_gpu_hour=10"});
  ASSERT_EQ(t.cli.code, 0) << t.cli.err;
  EXPECT_THAT(t.cli.out, HasSubstr("cost                  $28,800 (4 GPUs at $10.00 per GPU-hour)"));
}

}  // namespace
}  // namespace simtrain
