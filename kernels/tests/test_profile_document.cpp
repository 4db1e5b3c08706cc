// What the profiler writes is what the simulator reads.
#include <gtest/gtest.h>

#include <regex>

#include "sim/model/profile_database.hpp"
#include "profile_document.hpp"

namespace simtrain {
namespace {

TEST(ProfileDocument, ReadsBackAsADatabase) {
  const Scenario s = load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/tiny-4gpu.json");
  ProfileOptions options;
  options.command_line = "simtrain profile tiny-4gpu --out x.json";
  const Op qkv{"qkv", OpClass::gemm, {1024, 1536, 1024}, 3221225472.0, 8388608};
  // Not a measurement: any positive numbers do.
  const std::vector<ProfileEntry> entries = {{qkv, Dtype::bf16, "gemm 1024x1536x1024 bf16", 2e-5, 1.9e-5, 2.2e-5, 50}};
  const nlohmann::json skipped = {{{"op", "attn"}, {"shape", {1, 8, 1024, 64}}, {"reason", "out of memory"}}};
  const nlohmann::json document = profile_document({s}, options, {{"name", "NVIDIA H100 80GB HBM3"}}, entries, skipped);
  EXPECT_EQ(document["command"], options.command_line);
  EXPECT_EQ(document["scenarios"], nlohmann::json::array({"tiny-4gpu"}));
  EXPECT_TRUE(std::regex_match(document["measured_at"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  const ProfileDatabase database = parse_profile_database(document, "x.json");
  EXPECT_EQ(database.device_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(database.entries.size(), 1u);
  EXPECT_EQ(to_json(database.entries[0]), to_json(entries[0]));
}

TEST(ProfileDocument, CommandLineIsQuotedWhereAShellNeedsIt) {
  const char* argv[] = {"simtrain", "profile", "my scenario.json", "--set", "name='x'"};
  EXPECT_EQ(command_line(5, argv), R"(simtrain profile 'my scenario.json' --set 'name='\''x'\''')");
}

}  // namespace
}  // namespace simtrain
