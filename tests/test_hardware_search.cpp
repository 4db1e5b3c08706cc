// Hardware as a search dimension: `--vary cluster.topology.<field>` gives
// each grid point its own topology (a DP-bound step follows the NIC
// bandwidth), `--vary cluster.gpu` its own GPU type and price; a key the
// topology lacks or a value it refuses is named; a GPU on a system built for
// another is warned of (and --fabric-follows-gpu moves it to its own); the
// built-in B200, GB200 and MI300X carry their datasheets' peaks.
#include <map>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/engine/simulate.hpp"
#include "sim/scenario/fabric_match.hpp"
#include "sim/search/search.hpp"
#include "sim/search/search_decision.hpp"
#include "sim/search/search_report.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using testing::HasSubstr;
using testing::Not;

constexpr double GiB = 1024.0 * 1024 * 1024;

// tiny-4gpu on 16 GPUs (two nodes) as pure data parallelism, the one
// strategy of the grid: its gradient all-reduce crosses the NICs.
SearchRequest data_parallel_request(const Dimension& hardware) {
  SearchRequest r;
  r.base = load_scenario("tiny-4gpu", {"cluster.num_gpus=16", "training.global_batch_size=16"});
  r.base_dir = ".";
  r.dimensions = {{"tensor_model_parallel_size", {1}}, {"pipeline_model_parallel_size", {1}},
                  {"virtual_stages", {1}},             {"micro_batch_size", {1}},
                  {"zero_stage", {0}},                 {"recompute_granularity", {"none"}},
                  {"sequence_parallel", {false}},      hardware};
  r.top = 0;
  return r;
}

// The grid's rows (not the scenario's own), by their topology's NIC line rate.
std::map<double, const SearchRow*> rows_by_nic_Gbps(const SearchResult& result) {
  std::map<double, const SearchRow*> rows;
  for (const SearchRow& row : result.rows)
    if (!row.baseline) rows[row.scenario.cluster.topology.nic_bytes_per_second * 8 / 1e9] = &row;
  return rows;
}

TEST(HardwareSearch, EachNicBandwidthIsItsOwnTopologyAndTheDataParallelStepFollowsIt) {
  const SearchResult result = run_search(data_parallel_request({"cluster.topology.nic_Gbps", {100, 200, 400, 800}}),
                                         local_simulator(2));
  const auto rows = rows_by_nic_Gbps(result);
  ASSERT_EQ(rows.size(), 4u);
  double slower = 0;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {  // fastest NICs first
    EXPECT_GT(it->second->figures.step_seconds, slower) << it->first << " Gb/s";
    slower = it->second->figures.step_seconds;
  }
  EXPECT_THAT(result.columns, testing::Contains("cluster.topology.nic_Gbps"));
  EXPECT_THAT(decision_text(result), HasSubstr("cluster.topology.nic_Gbps=800"));
  EXPECT_EQ(to_json(result)["rows"][0]["topology"]["nic_Gbps"], 800);  // the fastest, its topology in full
}

TEST(HardwareSearch, LeafOversubscriptionGivesDistinctTopologies) {
  const SearchResult result = run_search(
      data_parallel_request({"cluster.topology.leaf_oversubscription", {1, 4}}), local_simulator(2));
  std::set<double> oversubscriptions;
  for (const SearchRow& row : result.rows)
    if (!row.baseline) oversubscriptions.insert(row.scenario.cluster.topology.leaf_oversubscription);
  EXPECT_EQ(oversubscriptions, (std::set<double>{1, 4}));
}

TEST(HardwareSearch, VaryingTheGpuPricesEachRowAtItsGpusPrice) {
  // USD per GPU-hour, the defaults of sim/scenario/gpu_spec.cpp.
  const std::map<std::string, double> price = {
      {"H100-SXM", 3.00}, {"H200", 4.00}, {"B200", 5.25}, {"GB200", 4.54}, {"MI300X", 1.70}};
  const SearchResult result =
      run_search(data_parallel_request({"gpu", {"H100-SXM", "H200", "B200", "GB200", "MI300X"}}), local_simulator(2));
  EXPECT_EQ(result.cost_unit, "USD");
  std::set<std::string> gpus;
  for (const SearchRow& row : result.rows) {
    gpus.insert(row.scenario.cluster.gpu.name);
    const double usd_per_gpu_hour = price.at(row.scenario.cluster.gpu.name);
    EXPECT_NEAR(row.cost, row.seconds_to_train / 3600 * 16 * usd_per_gpu_hour, row.cost * 1e-9);
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"H100-SXM", "H200", "B200", "GB200", "MI300X"}));
}

// The message of a search that must fail with exit code 2.
std::string refusal(const std::vector<std::string>& args) {
  const fixtures::CliResult r = fixtures::run_simtrain(args);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  return r.err;
}

TEST(HardwareSearch, ATopologyFieldThatIsNoneOrAValueItRefusesIsNamed) {
  EXPECT_EQ(refusal({"search", "tiny-4gpu", "--quiet", "--vary", "cluster.topology.nic_gbps=200,400"}),
            "simtrain: search: --vary cluster.topology.nic_gbps: unknown field (did you mean 'nic_Gbps'?)\n");
  EXPECT_THAT(refusal({"search", "tiny-4gpu", "--quiet", "--vary", "cluster.topology.nic_Gbps=400,0"}),
              HasSubstr("simtrain: search: --vary cluster.topology.nic_Gbps=0: "));
  EXPECT_THAT(refusal({"search", "tiny-4gpu", "--quiet", "--vary", "cluster.topology.torus_link_GBps=100,200"}),
              HasSubstr("--vary cluster.topology.torus_link_GBps: applies to kind torus, not to fat_tree"));
  EXPECT_THAT(refusal({"search", "tiny-4gpu", "--quiet", "--vary", "cluster.gpu=H100-SXM,B300"}),
              HasSubstr("--vary cluster.gpu=B300: unknown GPU 'B300'"));
}

TEST(HardwareSearch, SetReachesIntoANamedTopology) {
  const Scenario s = load_scenario("tiny-4gpu", {"cluster.topology.nic_Gbps=800"});
  EXPECT_EQ(s.cluster.topology.name, "dgx-h100-superpod");
  EXPECT_DOUBLE_EQ(s.cluster.topology.nic_bytes_per_second, 100e9);
  EXPECT_DOUBLE_EQ(s.cluster.topology.nvlink_bytes_per_second, 450e9);  // the rest as built in
}

const Topology& dgx_h100() {
  static const Topology topology = load_scenario("tiny-4gpu").cluster.topology;
  return topology;
}

TEST(FabricMatch, AnA100OnTheH100SystemIsWarnedOfAndToldItsOwn) {
  EXPECT_EQ(fabric_mismatch("A100-80GB", dgx_h100()),
            "GPU A100-80GB on topology dgx-h100-superpod built for H100-SXM, H200: NVLink figures of the topology "
            "kept (450 GB/s per GPU per direction); the built-in system for A100-80GB is dgx-a100-superpod "
            "(--set cluster.topology=dgx-a100-superpod; search --fabric-follows-gpu switches to it)");
  EXPECT_EQ(fabric_mismatch("H100-SXM", dgx_h100()), "");
  EXPECT_EQ(fabric_mismatch("H200", dgx_h100()), "");
  EXPECT_EQ(builtin_topology_for("B200", dgx_h100()), "dgx-b200-superpod");
  EXPECT_EQ(builtin_topology_for("MI300X", dgx_h100()), "mi300x-ib-fat-tree");
}

TEST(FabricMatch, TheSearchWarnsOfAMismatchAndFollowsTheGpuWhenAsked) {
  const std::vector<std::string> search = {"search", "tiny-4gpu", "--quiet", "--vary", "cluster.gpu=H100-SXM,A100-80GB",
                                           "--set", "sequence_parallel=false", "--set", "zero_stage=0",
                                           "--vary", "virtual_stages=1", "--vary", "micro_batch_size=1"};
  const fixtures::CliResult warned = fixtures::run_simtrain(search);
  ASSERT_EQ(warned.code, 0) << warned.err;
  EXPECT_THAT(warned.err, HasSubstr("simtrain search: warning: GPU A100-80GB on topology dgx-h100-superpod built for "
                                    "H100-SXM, H200: NVLink figures of the topology kept"));
  EXPECT_THAT(warned.err, Not(HasSubstr("GPU H100-SXM on")));

  std::vector<std::string> on_its_own = search;
  on_its_own.insert(on_its_own.end(), {"--vary", "cluster.topology=dgx-h100-superpod,dgx-a100-superpod"});
  const fixtures::CliResult each = fixtures::run_simtrain(on_its_own);
  ASSERT_EQ(each.code, 0) << each.err;
  EXPECT_THAT(each.err, HasSubstr("GPU A100-80GB on topology dgx-h100-superpod"));
  EXPECT_THAT(each.err, HasSubstr("GPU H100-SXM on topology dgx-a100-superpod built for A100-80GB"));

  std::vector<std::string> following = search;
  following.push_back("--fabric-follows-gpu");
  const fixtures::CliResult followed = fixtures::run_simtrain(following);
  ASSERT_EQ(followed.code, 0) << followed.err;
  EXPECT_THAT(followed.err, HasSubstr("GPU A100-80GB on topology dgx-a100-superpod, built for it (--fabric-follows-gpu)"));
  EXPECT_THAT(followed.err, Not(HasSubstr("NVLink figures of the topology kept")));
  // The sentence names where it ran, wherever its lines wrap.
  const std::string one_line = std::regex_replace(followed.out, std::regex(R"(\s+)"), " ");
  EXPECT_THAT(one_line, HasSubstr("x A100-80GB on dgx-a100-superpod, "));
}

TEST(NewGpus, B200Gb200AndMi300xCarryTheirDatasheetPeaks) {
  // Datasheet peaks; SMs (CUs) x dense bf16 FLOP per clock x tensor clock gives the bf16 peak.
  struct Datasheet {
    const char* name;
    double bf16_flops, fp8_flops, hbm_bytes_per_second, memory_bytes;
    int sm_count;
    double flops_per_clock, tolerance;
  };
  for (const Datasheet& d : {Datasheet{"B200", 2250e12, 4500e12, 8000e9, 180 * GiB, 148, 8192, 1e-3},
                             Datasheet{"GB200", 2500e12, 5000e12, 8000e9, 186 * GiB, 148, 8192, 1e-3},
                             Datasheet{"MI300X", 1307.4e12, 2614.9e12, 5300e9, 192 * GiB, 304, 2048, 1e-4}}) {
    SCOPED_TRACE(d.name);
    const GpuSpec* gpu = builtin_gpu(d.name);
    ASSERT_NE(gpu, nullptr);
    EXPECT_DOUBLE_EQ(gpu->peak_bf16_flops, d.bf16_flops);
    EXPECT_DOUBLE_EQ(gpu->peak_fp8_flops, d.fp8_flops);
    EXPECT_DOUBLE_EQ(gpu->hbm_bytes_per_second, d.hbm_bytes_per_second);
    EXPECT_DOUBLE_EQ(gpu->memory_bytes, d.memory_bytes);
    EXPECT_EQ(gpu->sm_count, d.sm_count);
    EXPECT_NEAR(gpu->sm_count * d.flops_per_clock * gpu->tensor_clock_hz, gpu->peak_bf16_flops,
                d.tolerance * gpu->peak_bf16_flops);
  }

  const GpuSpec* h800 = builtin_gpu("H800");
  ASSERT_NE(h800, nullptr);
  EXPECT_DOUBLE_EQ(h800->peak_bf16_flops, builtin_gpu("H100-SXM")->peak_bf16_flops);
}

TEST(NewGpus, EachSimulatesOnItsOwnSystem) {
  const double h100 = simulate(load_scenario("tiny-4gpu")).report.step_seconds;
  for (const auto& [gpu, topology] : {std::pair{"B200", "dgx-b200-superpod"}, {"GB200", "dgx-gb200-nvl72-superpod"}, {"MI300X", "mi300x-ib-fat-tree"}}) {
    const Scenario s = load_scenario("tiny-4gpu", {std::string("cluster.gpu=") + gpu, std::string("cluster.topology=") + topology});
    EXPECT_EQ(fabric_mismatch(gpu, s.cluster.topology), "");
    const double step = simulate(s).report.step_seconds;
    EXPECT_GT(step, 0) << gpu;
    if (std::string(gpu) != "MI300X") EXPECT_LT(step, h100);
  }
}

}  // namespace
}  // namespace simtrain
