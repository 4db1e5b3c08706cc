// Which kernel times each op of a scenario, and what the profiler plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "kernel_call.hpp"
#include "profile_plan.hpp"
#include "sim/program/program_builder.hpp"
#include "timing.hpp"

namespace simtrain {
namespace {

Scenario scenario(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/" + name + ".json", overrides);
}

// GPT-3 175B (TP 8 with sequence parallelism: per rank 12 heads, 256 norm rows,
// 6400 words) and its plan, built once: its Program has a million tasks.
const Scenario& gpt3() {
  static const Scenario s = scenario("gpt3-175b-1024xh100");
  return s;
}

const std::vector<ProfileItem>& gpt3_plan() {
  static const std::vector<ProfileItem> plan = profile_plan({gpt3()}, false);
  return plan;
}

// op name -> the call timing it, for every distinct op of the plan.
std::map<std::string, KernelCall> calls_by_name(const std::vector<ProfileItem>& plan) {
  std::map<std::string, KernelCall> calls;
  for (const ProfileItem& item : plan) calls.emplace(item.op.name, item.call);
  return calls;
}

std::map<std::string, KernelCall> calls_by_name(const Scenario& s) { return calls_by_name(profile_plan({s}, false)); }

TEST(KernelCall, Gpt3OpsMapToTheirKernels) {
  const std::map<std::string, KernelCall> calls = calls_by_name(gpt3_plan());
  const std::map<std::string, std::pair<Kernel, std::vector<int64_t>>> expected = {
      {"qkv", {Kernel::gemm, {2048, 4608, 12288}}},
      {"fc2_wgrad", {Kernel::gemm, {6144, 12288, 2048}}},
      {"attn", {Kernel::attention_forward, {1, 12, 2048, 128}}},
      {"attn_grad", {Kernel::attention_backward, {1, 12, 2048, 128}}},
      {"ln1", {Kernel::layernorm_forward, {256, 12288}}},
      {"ln2_grad", {Kernel::layernorm_backward, {256, 12288}}},
      {"final_norm", {Kernel::layernorm_forward, {256, 12288}}},
      {"gelu", {Kernel::gelu_forward, {2048 * 6144}}},
      {"gelu_grad", {Kernel::gelu_backward, {2048 * 6144}}},
      {"cross_entropy", {Kernel::cross_entropy_forward, {2048, 6400}}},
      {"cross_entropy_grad", {Kernel::cross_entropy_backward, {2048, 6400}}},
      {"embedding", {Kernel::embedding_forward, {2048, 12288, 6400, 2}}},
      {"embedding_wgrad", {Kernel::embedding_backward, {2048, 12288, 6400, 2}}},
  };
  for (const auto& [name, kernel_and_sizes] : expected) {
    ASSERT_TRUE(calls.count(name)) << name;
    EXPECT_EQ(calls.at(name).kernel, kernel_and_sizes.first) << name;
    EXPECT_EQ(calls.at(name).sizes, kernel_and_sizes.second) << name;
    EXPECT_EQ(calls.at(name).dtype, Dtype::bf16) << name;
  }
  EXPECT_EQ(calls.at("adam").kernel, Kernel::adamw);
}

TEST(KernelCall, OnlyOpsWithoutAKernelOfTheirOwnStreamTheirBytes) {
  std::set<std::string> elementwise;
  for (const ProfileItem& item : gpt3_plan())
    if (item.call.kernel == Kernel::elementwise) {
      elementwise.insert(item.op.name);
      EXPECT_EQ(item.call.sizes, std::vector<int64_t>{int64_t(item.op.bytes)}) << item.op.name;
    }
  // The optimizer step's passes but Adam (sim/model/optimizer_step.hpp) are copies, a norm and a memset.
  EXPECT_EQ(elementwise, (std::set<std::string>{"bias_dropout_add", "bias_dropout_add_grad", "final_norm_wgrad",
                                                "norm_bias_wgrad", "grad_norm", "params_copy", "zero_grad"}));
}

TEST(KernelCall, LlamaLikeModelsUseRmsNormAndSwiglu) {
  const std::map<std::string, KernelCall> calls =
      calls_by_name(scenario("tiny-4gpu", {"norm=rmsnorm", "hidden_act=silu", "position_embedding=rotary"}));
  EXPECT_EQ(calls.at("ln1").kernel, Kernel::rmsnorm_forward);
  EXPECT_EQ(calls.at("ln1_grad").kernel, Kernel::rmsnorm_backward);
  EXPECT_EQ(calls.at("swiglu").kernel, Kernel::swiglu_forward);
  EXPECT_EQ(calls.at("swiglu_grad").kernel, Kernel::swiglu_backward);
  EXPECT_EQ(calls.at("embedding").sizes.back(), 1);  // no position table
}

TEST(KernelCall, Fp8RunsGemmsInFp8AndTheRestInBf16) {
  const std::map<std::string, KernelCall> calls = calls_by_name(scenario("tiny-4gpu", {"dtype=fp8"}));
  EXPECT_EQ(calls.at("fc1").dtype, Dtype::fp8);
  EXPECT_EQ(calls.at("ln1").dtype, Dtype::bf16);
  EXPECT_EQ(calls.at("attn").dtype, Dtype::bf16);
}

TEST(KernelCall, UnfusedAttentionIsTwoGemmsAndTwoElementwiseOps) {
  const std::map<std::string, KernelCall> calls = calls_by_name(scenario("tiny-4gpu", {"flash_attention=false"}));
  EXPECT_EQ(calls.count("attn"), 0u);
  EXPECT_EQ(calls.at("attn_scores").kernel, Kernel::gemm);
  EXPECT_EQ(calls.at("attn_context_dgrad_rhs").kernel, Kernel::gemm);
  EXPECT_EQ(calls.at("softmax").kernel, Kernel::elementwise);
  EXPECT_EQ(calls.at("attn_dropout_grad").kernel, Kernel::elementwise);
}

TEST(KernelCall, DescriptionNamesKernelSizesAndDtype) {
  EXPECT_EQ((KernelCall{Kernel::gemm, Dtype::bf16, {2048, 4608, 12288}}.description()), "gemm 2048x4608x12288 bf16");
}

TEST(ProfilePlan, EveryDistinctOpOnce) {
  std::set<std::pair<std::string, std::vector<int64_t>>> seen;
  for (const ProfileItem& item : gpt3_plan()) EXPECT_TRUE(seen.insert({item.op.name, item.op.shape}).second) << item.op.name;
  std::set<std::pair<std::string, std::vector<int64_t>>> in_program;
  const Program program = build_program(gpt3(), build_workload(gpt3()));
  for (const Work& work : program.works)
    for (const Op& op : work.ops) in_program.insert({op.name, op.shape});
  EXPECT_EQ(seen, in_program);
}

TEST(ProfilePlan, SweepAddsTheStandardGrid) {
  std::map<std::string, int> counts;
  for (const ProfileItem& item : profile_plan({gpt3()}, true)) ++counts[item.op.name];
  EXPECT_EQ(counts["gemm"], 6 * 6 * 6);  // M, N, K in 512 .. 16384
  EXPECT_EQ(counts["attn"], 4);          // 2048 is in the scenario and in the grid
  EXPECT_EQ(counts["ln1"], 1 + 6);       // the scenario's, then 2^20 .. 2^30 elements
  EXPECT_EQ(counts["adam"], 3 + 6);      // one per pipeline stage's parameter count
}

// (name, shape, data type): what a database entry is looked up by.
using PlanKey = std::tuple<std::string, std::vector<int64_t>, Dtype>;

std::vector<PlanKey> plan_keys(const std::vector<ProfileItem>& plan) {
  std::vector<PlanKey> keys;
  for (const ProfileItem& item : plan) keys.emplace_back(item.op.name, item.op.shape, item.dtype);
  return keys;
}

TEST(ProfilePlan, SeveralScenariosShareOneDatabaseEachOpOnce) {
  const Scenario tiny = scenario("tiny-4gpu");
  const Scenario tiny_fp8 = scenario("tiny-4gpu", {"dtype=fp8"});
  const std::vector<PlanKey> alone = plan_keys(profile_plan({tiny}, false));
  EXPECT_EQ(plan_keys(profile_plan({tiny, tiny}, false)), alone);  // the same ops, planned once
  // The union in first-seen order: the bf16 plan, then what fp8 adds (its
  // GEMMs in fp8 and their casts); the ops both run in bf16 only once.
  std::vector<PlanKey> expected = alone;
  size_t fp8_gemms = 0;
  for (const PlanKey& key : plan_keys(profile_plan({tiny_fp8}, false))) {
    fp8_gemms += std::get<2>(key) == Dtype::fp8;
    if (std::find(alone.begin(), alone.end(), key) == alone.end()) expected.push_back(key);
  }
  EXPECT_GT(fp8_gemms, 0u);
  EXPECT_LT(expected.size(), alone.size() * 2);  // norms, activations... shared
  EXPECT_EQ(plan_keys(profile_plan({tiny, tiny_fp8}, false)), expected);
}

TEST(ProfilePlan, Fp8SweepTimesTheGemmsInFp8) {
  for (const Op& op : sweep_ops({}, Dtype::fp8)) {
    ASSERT_EQ(op.name, "gemm");
    EXPECT_TRUE(op.low_precision_operands);
    EXPECT_EQ(op_dtype(op, Dtype::fp8), Dtype::fp8);
    const double m = op.shape[0], n = op.shape[1], k = op.shape[2];
    EXPECT_DOUBLE_EQ(op.bytes, m * k + k * n + 2 * m * n);  // 1-byte inputs, a bf16 output
  }
  for (const Op& op : sweep_ops({}, Dtype::bf16)) EXPECT_FALSE(op.low_precision_operands);
}

TEST(ProfilePlan, SweepScalesFlopsAndBytesWithTheShape) {
  const Op attn{"attn", OpClass::attention, {1, 12, 2048, 128}, 4e10, 1e8};
  const Op ln1{"ln1", OpClass::memory_bound, {1 << 20}, 0, 4 << 20};
  for (const Op& op : sweep_ops({attn, ln1}, Dtype::bf16)) {
    if (op.name == "attn" && op.shape[2] == 4096) {
      EXPECT_DOUBLE_EQ(op.flops, 16e10);
      EXPECT_DOUBLE_EQ(op.bytes, 2e8);
    }
    if (op.name == "ln1") EXPECT_DOUBLE_EQ(op.bytes, 4.0 * op.shape[0]);
    if (op.name == "gemm" && op.shape == std::vector<int64_t>{512, 1024, 2048})
      EXPECT_DOUBLE_EQ(op.bytes, 2.0 * (512 * 2048 + 2048 * 1024 + 512 * 1024));
  }
}

TEST(Timing, PercentilesInterpolateBetweenSamples) {
  const TimingSummary t = summarize({5, 1, 4, 2, 3, 6, 7, 8, 9, 10, 11});  // 1 .. 11
  EXPECT_DOUBLE_EQ(t.median_seconds, 6);
  EXPECT_DOUBLE_EQ(t.p10_seconds, 2);
  EXPECT_DOUBLE_EQ(t.p90_seconds, 10);
  EXPECT_EQ(t.repetitions, 11);
  EXPECT_DOUBLE_EQ(summarize({1, 2}).median_seconds, 1.5);
}

TEST(Timing, RepetitionsAimAtTheTargetWithinBounds) {
  EXPECT_EQ(repetitions_for(kTargetSeconds / 50), 50);
  EXPECT_EQ(repetitions_for(1e-6), kMaxRepetitions);
  EXPECT_EQ(repetitions_for(1.0), kMinRepetitions);
}

}  // namespace
}  // namespace simtrain
