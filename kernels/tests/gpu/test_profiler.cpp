// The profiler end to end on the GPU: the small scenario's database.
#include "gpu_test_support.hpp"
#include "sim/model/profile_database.hpp"
#include "profiler.hpp"

namespace simtrain::testing_gpu {
namespace {

class Profiler : public GpuTest {};

TEST_F(Profiler, TimesEveryOpOfTheSmallScenario) {
  const Scenario scenario = load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/tiny-4gpu.json");
  ProfileOptions options;
  options.command_line = "test";
  const ProfileDatabase database = parse_profile_database(profile_kernels({scenario}, options), "profile");
  EXPECT_GE(database.entries.size(), 30u);
  for (const ProfileEntry& entry : database.entries) {
    EXPECT_GT(entry.median_seconds, 0) << entry.op.name;
    EXPECT_GE(entry.repetitions, 10) << entry.op.name;
  }
}

}  // namespace
}  // namespace simtrain::testing_gpu
