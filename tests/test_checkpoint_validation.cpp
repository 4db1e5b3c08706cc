// Published checkpoint figures (tests/validation/checkpointing.json) that
// simtrain's checkpoint model can be held to.
#include <gtest/gtest.h>

#include "sim/longrun/checkpoint_cost.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/step/memory_model.hpp"
#include "test_support.hpp"

using namespace simtrain;

TEST(CheckpointValidation, GeminisMtNlgCheckpointAtTwentyGigabits) {
  const nlohmann::json rows = fixtures::read_json(SIMTRAIN_VALIDATION_DIR "/checkpointing.json")["published_checkpoint_figures"];
  const nlohmann::json& gemini = rows[0];
  ASSERT_NE(gemini["source"].get<std::string>().find("GEMINI"), std::string::npos);
  const Scenario s = load_scenario("megatron-529.6b-2520xa100");
  const Workload w = build_workload(s);
  const Program program = build_program(s, w);
  double bytes = 0;
  for (double b : checkpoint_bytes_per_rank(s, w, program)) bytes += b;
  const double minutes = bytes / (20e9 / 8) / 60;  // every byte through the 20 Gb/s storage
  EXPECT_NEAR(minutes, gemini["published_minutes"].get<double>(), 0.2 * gemini["published_minutes"].get<double>());
  EXPECT_GT(minutes, gemini["published_minutes"].get<double>());  // 14 bytes a parameter, Gemini's 12
}
