// Absurd sizes are refused early, with the file, the field and the reason
// (sim/base/limits.hpp), instead of exhausting memory or overflowing a count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/limits.hpp"
#include "sim/scenario/scenario.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::AllOf;
using testing::HasSubstr;

class Limits : public testing::Test {
protected:
  // tiny-4gpu (TP 2, PP 2, 8 layers, 8 micro-batches) changed by `change`,
  // written to scenario.json; returns the message of the InputError loading it throws.
  std::string refusal(const std::function<void(json&)>& change, const std::vector<std::string>& overrides = {}) {
    json document = fixtures::read_json(fs::path(SIMTRAIN_SOURCE_DIR) / "scenarios/tiny-4gpu.json");
    change(document);
    std::ofstream(scenario_path()) << document.dump();
    return fixtures::error_loading(scenario_path(), overrides);
  }

  std::string scenario_path() const { return path("scenario.json"); }
  std::string path(const std::string& name) const { return (temporary_.path() / name).string(); }

  fixtures::TemporaryDirectory temporary_{"limits"};
};

// ---- sizes --------------------------------------------------------------

TEST_F(Limits, TrillionGpus) {
  EXPECT_THAT(refusal([](json& s) { s["cluster"]["num_gpus"] = 1'000'000'000'000; }),
              AllOf(HasSubstr(scenario_path()), HasSubstr("cluster.num_gpus: must be at most 1,073,741,824")));
}

TEST_F(Limits, MoreGpusThanTheMaximum) {
  EXPECT_THAT(refusal([](json& s) {
                s["cluster"]["num_gpus"] = 2 * limits::max_gpus;
                s["training"]["global_batch_size"] = limits::max_gpus / 2;  // one micro-batch per pipeline
              }),
              HasSubstr("cluster.num_gpus: must be at most 1,048,576, got 2097152"));
}

TEST_F(Limits, BillionLayers) {
  EXPECT_THAT(refusal([](json& s) { s["model"]["num_hidden_layers"] = 1'000'000'000; }),
              HasSubstr("model.num_hidden_layers: must be at most 65,536, got 1000000000"));
}

TEST_F(Limits, HiddenSizeWhoseWeightsOverflowCounts) {
  EXPECT_THAT(refusal([](json& s) { s["model"]["hidden_size"] = limits::max_integer; }),
              AllOf(HasSubstr("model.hidden_size: too large: a weight (hidden_size x query/key/value width)"),
                    HasSubstr("more than the limit of 1099511627776")));
}

TEST_F(Limits, VocabularyWhoseLogitsOverflowCounts) {
  EXPECT_THAT(refusal([](json& s) {
                s["model"]["vocab_size"] = limits::max_integer;
                s["model"]["hidden_size"] = 16;
                s["model"]["intermediate_size"] = 64;
                s["training"]["micro_batch_size"] = 2;
              }),
              HasSubstr("training.seq_length: too large: an activation (micro_batch_size x seq_length x vocab_size)"));
}

TEST_F(Limits, SequenceWhoseAttentionScoresOverflowCounts) {
  EXPECT_THAT(refusal([](json& s) {
                s["model"].erase("max_position_embeddings");
                s["model"]["vocab_size"] = 16;
                s["model"]["hidden_size"] = 16;
                s["model"]["intermediate_size"] = 16;
                s["training"]["seq_length"] = 1 << 25;
                s["training"]["flash_attention"] = false;
              }),
              HasSubstr("training.seq_length: too large: the attention scores (micro_batch_size x heads x seq_length^2)"));
}

TEST_F(Limits, IntegerBeyondTheMaximum) {
  EXPECT_THAT(refusal([](json& s) { s["training"]["seq_length"] = 1e15; }),
              HasSubstr("training.seq_length: must be at most 1,073,741,824, got 1000000000000000"));
}

// The Program's memory is estimated before it is built: 65536 GPUs x 2000
// micro-batches would take more than the limit.
TEST_F(Limits, ProgramTooLargeForMemory) {
  const std::string message = refusal([](json& s) {
    s["parallelism"] = {{"tensor_model_parallel_size", 1}, {"pipeline_model_parallel_size", 1}};
    s["cluster"]["num_gpus"] = 65536;
    s["training"]["global_batch_size"] = 65536 * 2000;
  });
  EXPECT_THAT(message, AllOf(HasSubstr(scenario_path() + ": too large to simulate (its Program would take about "),
                             HasSubstr(" GiB: about "),
                             HasSubstr(" tasks, 65536 GPUs x 2000 micro-batches), more than the limit of 16 GiB; "
                                       "simulate fewer GPUs or micro-batches")));
}

// ---- files ----------------------------------------------------------------

// A file past the size limit is refused before it is read: a sparse 2 GB file
// takes no disk and would take 2 GB of memory to read.
TEST_F(Limits, TwoGigabyteFiles) {
  const auto sparse = [&](const std::string& name) {
    std::ofstream(path(name)) << "{";
    fs::resize_file(path(name), uintmax_t{2} << 30);
    return path(name);
  };
  const std::string too_large = ": is 2147483648 bytes, larger than the limit of 64 MiB";
  const std::string config = sparse("config.json"), topology = sparse("topology.json");
  EXPECT_EQ(refusal([](json& s) { s["model"] = "config.json"; }), config + too_large);
  EXPECT_EQ(refusal([](json& s) { s["cluster"]["topology"] = "topology.json"; }), topology + too_large);
  EXPECT_EQ(fixtures::error_loading(sparse("scenario.json")), scenario_path() + too_large);
}

// `depth` arrays around a string, as the scenario's description.
std::string nested_description(int depth) {
  return "{\"description\": " + std::string(depth, '[') + "\"x\"" + std::string(depth, ']') + "}";
}

TEST_F(Limits, DeeplyNestedJson) {
  // The string sits inside the scenario object and 63 arrays: 64 levels, parsed
  // (and refused for not being a string); one array more is refused while parsing.
  std::ofstream(scenario_path()) << nested_description(limits::max_json_depth - 1);
  EXPECT_THAT(fixtures::error_loading(scenario_path()), HasSubstr("description: expected a string"));
  const std::string too_deep = scenario_path() + ": nested more than 64 levels deep";
  std::ofstream(scenario_path()) << nested_description(limits::max_json_depth);
  EXPECT_EQ(fixtures::error_loading(scenario_path()), too_deep);
  // Deep enough to overflow the stack, were it built and copied recursively.
  std::ofstream(scenario_path()) << nested_description(1'000'000);
  EXPECT_EQ(fixtures::error_loading(scenario_path()), too_deep);
}

TEST_F(Limits, DeeplyNestedOverride) {
  EXPECT_THAT(refusal([](json&) {}, {"description=" + std::string(100'000, '[') + std::string(100'000, ']')}),
              HasSubstr(scenario_path() + ": --set description: nested more than 64 levels deep"));
}

}  // namespace
}  // namespace simtrain
