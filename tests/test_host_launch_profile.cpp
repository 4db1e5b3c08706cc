// Host launch costs measured by bench/launch_rate_probe.py, read from the
// scenario's cluster.host_launch_profile in place of the cited figures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/base/input_error.hpp"
#include "sim/engine/host_lane.hpp"
#include "sim/model/host_launches.hpp"
#include "sim/model/workload.hpp"
#include "sim/program/program_builder.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using nlohmann::json;
using testing::HasSubstr;

// What the probe writes, every figure `factor` times the cited one it measures.
json probe_output(double factor) {
  const HostLaunchSeconds& cited = host_launch_seconds();
  return {{"device", "NVIDIA H100 80GB HBM3"},
          {"torch", "2.9.0"},
          {"seconds_per_launch",
           {{"python_forward", factor * cited.python_forward},
            {"python_no_grad", factor * cited.python_backward},
            {"graph_replay_1", factor * cited.graph},
            {"graph_replay_64", 5e-6},
            {"triton", factor * cited.triton},
            {"sync_round_trip", 30e-6},
            {"kernel_gpu", 2e-6}}}};
}

class HostLaunchProfileFile : public testing::Test {
protected:
  std::string write(const json& profile) {
    const std::filesystem::path path = dir_.path() / "probe.json";
    std::ofstream(path) << profile.dump();
    return path.string();
  }
  // The shipped Qwen3 scenario written beside `profile`, which it names.
  Scenario qwen3_with(const json& profile) {
    write(profile);
    json scenario = fixtures::read_json(std::filesystem::path(SIMTRAIN_SOURCE_DIR) / "scenarios/qwen3-30b-a3b-16xh100.json");
    scenario["cluster"]["host_launch_profile"] = "probe.json";
    std::ofstream(dir_.path() / "scenario.json") << scenario.dump();
    return load_scenario((dir_.path() / "scenario.json").string());
  }
  std::string error_reading(const json& profile) {
    const std::string path = write(profile);
    return fixtures::input_error_of([&] { read_host_launch_profile(path); });
  }
  fixtures::TemporaryDirectory dir_{"host-launch-profile"};
};

TEST_F(HostLaunchProfileFile, MeasuredFiguresReplaceTheCitedOnesAndTheRestScaleWithTheHost) {
  const HostLaunchProfile profile = read_host_launch_profile(write(probe_output(2)));
  EXPECT_EQ(profile.device, "NVIDIA H100 80GB HBM3");
  const HostLaunchSeconds& cited = host_launch_seconds();
  const HostLaunchSeconds measured = host_launch_seconds(profile);
  EXPECT_DOUBLE_EQ(measured.python_forward, 2 * cited.python_forward);
  EXPECT_DOUBLE_EQ(measured.python_backward, 2 * cited.python_backward);
  EXPECT_DOUBLE_EQ(measured.triton, 2 * cited.triton);
  EXPECT_DOUBLE_EQ(measured.graph, 2 * cited.graph);
  // Not timed apart by the probe: the no-grad call's ratio to its cited figure.
  EXPECT_DOUBLE_EQ(measured.cpp_backward, 2 * cited.cpp_backward);
  EXPECT_DOUBLE_EQ(measured.follow_on, 2 * cited.follow_on);
  // The wait's own latency: the round trip less the copy's launch.
  EXPECT_DOUBLE_EQ(host_sync_seconds(profile), 30e-6 - 2 * cited.python_backward);
  EXPECT_EQ(host_sync_seconds(HostLaunchProfile{}), 0);
}

TEST_F(HostLaunchProfileFile, AHostTwiceAsSlowTakesTwiceAsLongToLaunchEveryWork) {
  const Scenario cited = load_scenario(std::string(SIMTRAIN_SOURCE_DIR) + "/scenarios/qwen3-30b-a3b-16xh100.json");
  const Scenario slow = qwen3_with(probe_output(2));
  EXPECT_EQ(slow.cluster.host_launch_profile.file, (dir_.path() / "probe.json").string());
  const Workload workload = build_workload(cited);
  for (const std::vector<Op>* ops : {&workload.layer.forward.ops, &workload.layer.backward_input.ops, &workload.layer.backward_weight.ops}) {
    const HostWork before = host_work(*ops, cited), after = host_work(*ops, slow);
    EXPECT_EQ(after.kernels, before.kernels);
    EXPECT_EQ(after.syncs, before.syncs);
    EXPECT_NEAR(after.launch_seconds, 2 * before.launch_seconds, 1e-15);
  }
  const Program program = build_program(cited, workload);
  EXPECT_DOUBLE_EQ(host_model(program, slow).communication_launch_seconds,
                   2 * host_model(program, cited).communication_launch_seconds);
  EXPECT_DOUBLE_EQ(host_model(program, slow).sync_seconds, 30e-6 - 2 * host_launch_seconds().python_backward);
}

TEST_F(HostLaunchProfileFile, BadFilesAreRefusedNamingTheFileAndField) {
  const std::string file = (dir_.path() / "probe.json").string();
  EXPECT_EQ(error_reading(json::array()), file + ": expected a JSON object, as bench/launch_rate_probe.py --json writes");
  EXPECT_EQ(error_reading({{"device", "H100"}}),
            file + ": seconds_per_launch: expected an object of seconds per launch, as bench/launch_rate_probe.py "
                   "--json writes");
  json slow = probe_output(1);
  slow["seconds_per_launch"]["python_forward"] = 2.5;
  EXPECT_EQ(error_reading(slow),
            file + ": seconds_per_launch.python_forward: expected seconds per launch above 0 and below 1, got 2.5");
  json negative = probe_output(1);
  negative["seconds_per_launch"]["triton"] = -1e-6;
  EXPECT_THAT(error_reading(negative), HasSubstr(file + ": seconds_per_launch.triton: "));
  json mistyped = probe_output(1);
  mistyped["seconds_per_launch"]["python_foward"] = 1e-6;
  EXPECT_THAT(error_reading(mistyped), HasSubstr(file + ": seconds_per_launch.python_foward: "));
  EXPECT_EQ(error_reading({{"seconds_per_launch", json::object()}}),
            file + ": seconds_per_launch: none of python_forward, python_no_grad, triton, graph_replay_1, "
                   "sync_round_trip");
  EXPECT_THAT(fixtures::input_error_of([&] {
                write(probe_output(1));
                json scenario = fixtures::read_json(std::filesystem::path(SIMTRAIN_SOURCE_DIR) / "scenarios/tiny-4gpu.json");
                scenario["cluster"]["host_launch_profile"] = "elsewhere.json";
                std::ofstream(dir_.path() / "scenario.json") << scenario.dump();
                load_scenario((dir_.path() / "scenario.json").string());
              }),
              HasSubstr("scenario.json: cluster.host_launch_profile: no such file: "));
}

}  // namespace
}  // namespace simtrain
