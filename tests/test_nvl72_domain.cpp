// A GB200 NVL72 rack as one 72-GPU node: tensor parallelism up to 72 runs
// inside it, its collectives never leave NVLink, and pipeline and data
// parallelism span racks over the NICs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/engine/simulate.hpp"
#include "sim/network/fabric.hpp"
#include "sim/scenario/fabric_match.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using testing::HasSubstr;
using testing::StartsWith;

// tiny-4gpu's GPT widened to 72 heads (so that TP 8, 24, 36 and 72 divide
// them and its FFN) on two GB200 NVL72 racks.
Scenario two_racks(int tensor, int pipeline) {
  return load_scenario("tiny-4gpu", {"cluster.gpu=GB200", "cluster.topology=dgx-gb200-nvl72-superpod",
                                     "cluster.num_gpus=144", "model.hidden_size=4608", "model.num_attention_heads=72",
                                     "model.intermediate_size=18432", "training.global_batch_size=144",
                                     "tensor_model_parallel_size=" + std::to_string(tensor),
                                     "pipeline_model_parallel_size=" + std::to_string(pipeline)});
}

TEST(Nvl72Domain, TheSystemIsOneRackOf72GpusWithANicEach) {
  const Topology t = two_racks(8, 1).cluster.topology;
  EXPECT_EQ(t.built_for, std::vector<std::string>{"GB200"});
  EXPECT_EQ(t.gpus_per_node, 72);
  EXPECT_EQ(t.nics_per_node, 72);
  EXPECT_DOUBLE_EQ(t.nvlink_bytes_per_second, 900e9);
  EXPECT_DOUBLE_EQ(t.nic_bytes_per_second, 400e9 / 8);
}

TEST(Nvl72Domain, TensorParallelismUpTo72RunsInsideOneRack) {
  for (const auto& [tensor, pipeline] : {std::pair{8, 1}, {24, 1}, {36, 1}, {72, 1}, {72, 2}}) {
    SCOPED_TRACE("TP " + std::to_string(tensor) + " PP " + std::to_string(pipeline));
    const Scenario s = two_racks(tensor, pipeline);
    EXPECT_EQ(fabric_mismatch("GB200", s.cluster.topology), "");
    const Simulation sim = simulate(s);
    EXPECT_FALSE(sim.report.stopped);
    EXPECT_GT(sim.report.step_seconds, 0);

    // Every TP group lies in one rack: each of its ring's hops is GPU to NVLink Switch to GPU.
    const Fabric fabric(s.cluster.topology, s.cluster.num_gpus);
    int tp_groups = 0;
    for (const Group& g : sim.program.groups) {
      if (g.dim != CommDim::tp) continue;
      ++tp_groups;
      ASSERT_EQ(static_cast<int>(g.ranks.size()), tensor);
      for (size_t i = 0; i < g.ranks.size(); ++i)
        for (int link : fabric.route(g.ranks[i], g.ranks[(i + 1) % g.ranks.size()]))
          EXPECT_THAT(fabric.links()[link].name, StartsWith("nvlink")) << g.name;
    }
    EXPECT_EQ(tp_groups, 144 / tensor);
    // Rank 0's last data-parallel peer (rank tp + tensor x (dp + data x pp)),
    // or its next pipeline stage, is in the other rack: reached over the NICs.
    const int peer = pipeline > 1 ? 72 : 144 - tensor;
    EXPECT_EQ(fabric.node_of(peer), 1);
    EXPECT_THAT(fabric.links()[fabric.route(0, peer).front()].name, StartsWith("nic0."));
  }
}

TEST(Nvl72Domain, TpAloneInsideOneRackLoadsNoNic) {
  const Scenario s = load_scenario(
      "tiny-4gpu", {"cluster.gpu=GB200", "cluster.topology=dgx-gb200-nvl72-superpod", "cluster.num_gpus=72",
                    "model.hidden_size=4608", "model.num_attention_heads=72", "model.intermediate_size=18432",
                    "tensor_model_parallel_size=72", "pipeline_model_parallel_size=1"});
  const StepReport report = simulate(s).report;
  ASSERT_FALSE(report.busiest_links.empty());
  for (const LinkLoad& l : report.busiest_links) EXPECT_THAT(l.link, StartsWith("nvlink"));
  EXPECT_GT(report.mean_split.tp_seconds, 0);
}

TEST(Nvl72Domain, AnH100OnTheGb200SystemIsWarnedOf) {
  const Scenario s = load_scenario("tiny-4gpu", {"cluster.topology=dgx-gb200-nvl72-superpod"});
  EXPECT_EQ(fabric_mismatch("H100-SXM", s.cluster.topology),
            "GPU H100-SXM on topology dgx-gb200-nvl72-superpod built for GB200: NVLink figures of the topology kept "
            "(900 GB/s per GPU per direction); the built-in system for H100-SXM is dgx-h100-superpod (--set "
            "cluster.topology=dgx-h100-superpod; search --fabric-follows-gpu switches to it)");
  EXPECT_EQ(builtin_topology_for("GB200", s.cluster.topology), "dgx-gb200-nvl72-superpod");

  const fixtures::CliResult r = fixtures::run_simtrain(
      {"simulate", "tiny-4gpu", "--quiet", "--set", "cluster.topology=dgx-gb200-nvl72-superpod"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("simtrain: warning: GPU H100-SXM on topology dgx-gb200-nvl72-superpod built for GB200"));
}

TEST(Nvl72Domain, TheSearchMovesAGb200ToItsOwnSystem) {
  const fixtures::CliResult r = fixtures::run_simtrain(
      {"search", "tiny-4gpu", "--quiet", "--vary", "cluster.gpu=H100-SXM,GB200", "--fabric-follows-gpu", "--set",
       "sequence_parallel=false", "--set", "zero_stage=0", "--vary", "virtual_stages=1", "--vary",
       "micro_batch_size=1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("GPU GB200 on topology dgx-gb200-nvl72-superpod, built for it (--fabric-follows-gpu)"));
  EXPECT_THAT(r.err, testing::Not(HasSubstr("NVLink figures of the topology kept")));
}

}  // namespace
}  // namespace simtrain
