// Topologies given as SimGrid platform files (sim/engine/platform_file.hpp):
// a hand-written one-switch cluster gives the ring all-reduce's closed form,
// hosts in document order are ranks, a platform exported from a shipped
// topology replays to the JSON topology's step time, and bad files are
// refused naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/base/input_error.hpp"
#include "sim/engine/platform_file.hpp"
#include "sim/engine/replay.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/network/fabric.hpp"
#include "sim/network/platform_routes.hpp"
#include "sim/step/report.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

const std::string data_dir = std::string(SIMTRAIN_SOURCE_DIR) + "/tests/data";
const std::string one_switch = data_dir + "/four-gpus-one-switch.xml";

Topology platform_topology(const std::string& path, int gpus) {
  return with_platform_routes(topology_from_json(path, "test.json", "cluster.topology", "."), gpus);
}

// The InputError `with_platform_routes` (or reading the topology) throws for `path`.
std::string platform_error(const std::string& path, int gpus) {
  return fixtures::input_error_of([&] { platform_topology(path, gpus); });
}

void write_file(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string platform_text(const std::string& zone_body) {
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n" +
         zone_body + "</zone></platform>\n";
}

// `scenario` (a built-in name) on `topology`, and on the platform exported from it for its GPU count.
struct StepTimes {
  double json_seconds = 0, platform_seconds = 0;
  StepReport platform_report;
};

StepTimes json_and_exported(const std::string& scenario, const std::vector<std::string>& overrides) {
  const Scenario on_json = load_scenario(scenario, overrides);
  const fixtures::TemporaryDirectory dir("platform-export");
  const std::string xml = (dir.path() / "exported.xml").string();
  const fixtures::CliResult exported =
      fixtures::run_simtrain({"export-platform", "--topology", on_json.cluster.topology.name, "--num-gpus",
                              std::to_string(on_json.cluster.num_gpus), xml});
  EXPECT_EQ(exported.code, 0) << exported.err;
  std::vector<std::string> on_platform = overrides;
  on_platform.push_back("cluster.topology=" + xml);
  on_platform.push_back("cluster.topology.gpus_per_node=" + std::to_string(on_json.cluster.topology.gpus_per_node));
  const Scenario on_xml = load_scenario(scenario, on_platform);
  EXPECT_EQ(on_xml.cluster.topology.kind, TopologyKind::simgrid_platform);
  StepTimes times;
  times.json_seconds = simulate(on_json, {}, SensitivityReplays::none).report.step_seconds;
  Simulation sim = simulate(on_xml, {}, SensitivityReplays::none);
  times.platform_seconds = sim.report.step_seconds;
  times.platform_report = std::move(sim.report);
  return times;
}

}  // namespace

TEST(PlatformFile, HandWrittenSwitchGivesTheRingAllReduceClosedForm) {
  const Topology topology = platform_topology(one_switch, 4);
  ASSERT_EQ(topology.kind, TopologyKind::simgrid_platform);
  const Fabric fabric(topology, 4);
  ASSERT_EQ(fabric.route(0, 3).size(), 2u);
  EXPECT_EQ(fabric.links()[fabric.route(0, 3)[0]].name, "gpu_link_0_UP");
  EXPECT_EQ(fabric.links()[fabric.route(0, 3)[1]].name, "gpu_link_3_DOWN");
  EXPECT_DOUBLE_EQ(fabric.route_latency_seconds(0, 3), 2e-6);
  EXPECT_EQ(fabric.physical_links(fabric.route(0, 3)[0]), 1);
  const double bytes = 256e6;
  ReplayOptions options;
  options.allreduce_algorithm = Algorithm::ring;
  const Timeline t = replay(fixtures::lone_collective(4, TaskKind::ALLREDUCE, bytes, CommDim::dp), fabric, {}, options);
  // 2 x 3/4 x 256 MB / 10 GB/s + 6 steps x 2 us = 38.412 ms
  EXPECT_NEAR(t.step_seconds / fixtures::ring_seconds(TaskKind::ALLREDUCE, 4, bytes, 10e9, 2e-6), 1.0, 0.01);
}

// A Floyd zone routes only once sealed: given routes from each GPU to the
// switch, it finds the GPU-to-GPU paths of the cluster file above.
TEST(PlatformFile, FloydZoneRoutesAsTheClusterItDescribes) {
  const Fabric floyd(platform_topology(data_dir + "/four-gpus-floyd.xml", 4), 4);
  const Fabric cluster(platform_topology(one_switch, 4), 4);
  for (int src = 0; src < 4; ++src)
    for (int dst = 0; dst < 4; ++dst) {
      SCOPED_TRACE(std::to_string(src) + " -> " + std::to_string(dst));
      const std::vector<int> route = floyd.route(src, dst);
      ASSERT_EQ(route.size(), src == dst ? 0u : 2u);
      if (src == dst) continue;
      EXPECT_EQ(floyd.links()[route[0]].name, "link" + std::to_string(src) + "_UP");
      EXPECT_EQ(floyd.links()[route[1]].name, "link" + std::to_string(dst) + "_DOWN");
      EXPECT_DOUBLE_EQ(floyd.route_latency_seconds(src, dst), cluster.route_latency_seconds(src, dst));
    }
  const Scenario on_floyd = load_scenario("tiny-4gpu", {"cluster.topology=" + data_dir + "/four-gpus-floyd.xml"});
  const Scenario on_cluster = load_scenario("tiny-4gpu", {"cluster.topology=" + one_switch});
  EXPECT_EQ(simulate(on_floyd, {}, SensitivityReplays::none).report.step_seconds,
            simulate(on_cluster, {}, SensitivityReplays::none).report.step_seconds);
}

TEST(PlatformFile, HostsInDocumentOrderAreRanks) {
  const fixtures::TemporaryDirectory dir("platform-order");
  const std::string xml = (dir.path() / "two.xml").string();
  write_file(xml, platform_text("<host id=\"zeta\" speed=\"1Gf\"/><host id=\"alpha\" speed=\"1Gf\"/>\n"
                                "<link id=\"z_to_a\" bandwidth=\"5GBps\" latency=\"3us\"/>\n"
                                "<link id=\"a_to_z\" bandwidth=\"7GBps\" latency=\"4us\"/>\n"
                                "<route src=\"zeta\" dst=\"alpha\" symmetrical=\"NO\"><link_ctn id=\"z_to_a\"/></route>\n"
                                "<route src=\"alpha\" dst=\"zeta\" symmetrical=\"NO\"><link_ctn id=\"a_to_z\"/></route>\n"));
  const Fabric fabric(platform_topology(xml, 2), 2);
  const LinkSpec& from_rank0 = fabric.links()[fabric.route(0, 1).at(0)];
  EXPECT_EQ(from_rank0.name, "z_to_a");
  EXPECT_DOUBLE_EQ(from_rank0.bytes_per_second, 5e9);
  EXPECT_DOUBLE_EQ(from_rank0.latency_seconds, 3e-6);
  EXPECT_EQ(fabric.links()[fabric.route(1, 0).at(0)].name, "a_to_z");
}

TEST(PlatformFile, ExportedTopologyReplaysTinyToTheSameStepTime) {
  const StepTimes t = json_and_exported("tiny-4gpu", {});
  EXPECT_NEAR(t.platform_seconds / t.json_seconds, 1.0, 0.01);
}

TEST(PlatformFile, Exported16GpuTopologiesReplayToTheSameStepTime) {
  // TP 2 x PP 2 x DP 4: data-parallel rings leave the node (DGX H100: over NICs and leaves).
  for (const std::string topology : {"dgx-h100-superpod", "tpu-v5p-torus", "perlmutter-dragonfly"}) {
    const StepTimes t = json_and_exported(
        "tiny-4gpu", {"cluster.num_gpus=16", "training.global_batch_size=32", "cluster.topology=" + topology});
    EXPECT_NEAR(t.platform_seconds / t.json_seconds, 1.0, 0.01) << topology;
  }
}

TEST(PlatformFile, ReportSaysWhatIsOffForAPlatform) {
  const StepTimes t = json_and_exported("tiny-4gpu", {});
  const std::string text = to_text(t.platform_report);
  EXPECT_NE(text.find("NOTE"), std::string::npos) << text;
  EXPECT_NE(text.find("no bundled links"), std::string::npos) << text;
  const nlohmann::json json = to_json(t.platform_report);
  const nlohmann::json& platform = json["scenario"]["cluster"]["simgrid_platform"];
  EXPECT_TRUE(platform["file"].get<std::string>().ends_with("exported.xml"));
  EXPECT_EQ(platform["notes"].size(), simgrid_platform_notes().size());
}

TEST(PlatformFile, BadFilesAreRefusedNamingTheFile) {
  const fixtures::TemporaryDirectory dir("platform-bad");
  const std::string missing = (dir.path() / "missing.xml").string();
  EXPECT_NE(platform_error(missing, 4).find("no such file: " + missing), std::string::npos);

  const std::string not_xml = (dir.path() / "not-xml.xml").string();
  write_file(not_xml, "this is not XML\n");
  const std::string parse = platform_error(not_xml, 4);
  EXPECT_EQ(parse.rfind(not_xml + ": not a SimGrid platform", 0), 0u) << parse;

  const std::string too_few = platform_error(one_switch, 8);
  EXPECT_EQ(too_few.rfind(one_switch + ": holds 4 hosts, the job has 8 GPUs", 0), 0u) << too_few;

  const std::string fatpipe = (dir.path() / "fatpipe.xml").string();
  write_file(fatpipe, platform_text("<host id=\"a\" speed=\"1Gf\"/><host id=\"b\" speed=\"1Gf\"/>\n"
                                    "<link id=\"bus\" bandwidth=\"5GBps\" latency=\"0\" sharing_policy=\"FATPIPE\"/>\n"
                                    "<route src=\"a\" dst=\"b\"><link_ctn id=\"bus\"/></route>\n"));
  const std::string fat = platform_error(fatpipe, 2);
  EXPECT_NE(fat.find(fatpipe + ": link bus is FATPIPE"), std::string::npos) << fat;

  const std::string unrouted = (dir.path() / "unrouted.xml").string();
  write_file(unrouted, platform_text("<host id=\"a\" speed=\"1Gf\"/><host id=\"b\" speed=\"1Gf\"/>\n"));
  const std::string no_route = platform_error(unrouted, 2);
  EXPECT_EQ(no_route, unrouted + ": no route from a to b: every pair of GPUs needs one");
}

TEST(PlatformFile, ParameterServersAndTrainingRunsNeedAJsonTopology) {
  const std::string servers = fixtures::error_loading(
      "tiny-4gpu", {"cluster.topology=" + one_switch, "parallelism.dp_sync=parameter_server"});
  EXPECT_NE(servers.find("parallelism.dp_sync: parameter servers"), std::string::npos) << servers;
  const fixtures::CliResult train =
      fixtures::run_simtrain({"train", "tiny-4gpu", "--set", "cluster.topology=" + one_switch, "--steps", "10"});
  EXPECT_EQ(train.code, 2);
  EXPECT_NE(train.err.find(one_switch + ": checkpoint writes"), std::string::npos) << train.err;
}

TEST(PlatformFile, ExportReplacesAnExistingFileOnlyWithForce) {
  const fixtures::TemporaryDirectory dir("platform-force");
  const std::string xml = (dir.path() / "mine.xml").string();
  write_file(xml, "my own platform\n");
  const std::vector<std::string> args = {"export-platform", "--topology", "dgx-h100-superpod", "--num-gpus", "4", xml};
  const fixtures::CliResult refused = fixtures::run_simtrain(args);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("exists (pass --force to replace it)"), std::string::npos) << refused.err;
  EXPECT_EQ(fixtures::read_text(xml), "my own platform\n");
  std::vector<std::string> forced = args;
  forced.push_back("--force");
  const fixtures::CliResult replaced = fixtures::run_simtrain(forced);
  EXPECT_EQ(replaced.code, 0) << replaced.err;
  EXPECT_NE(fixtures::read_text(xml).find("<route src=\"gpu0\" dst=\"gpu3\""), std::string::npos);
  EXPECT_EQ(platform_topology(xml, 4).platform->gpus, 4);
}

}  // namespace simtrain
