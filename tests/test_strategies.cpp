// Strategy dimensions of the Program generator: how data-parallel ranks
// synchronise (ring, tree, hierarchical, parameter server), gradient
// compression, uneven pipeline stages; and the communication diagnostics of
// every report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "sim/base/input_error.hpp"
#include "sim/engine/compute_interference.hpp"
#include "sim/engine/replay.hpp"
#include "sim/engine/simulate.hpp"
#include "sim/model/partition.hpp"
#include "sim/model/profiled_cost_model.hpp"
#include "sim/program/program_builder.hpp"
#include "sim/step/memory_model.hpp"
#include "test_support.hpp"

namespace simtrain {
namespace {

using fixtures::one_gpu_per_node;
using fixtures::scenario_from;
using fixtures::scenario_json;
using nlohmann::json;
using testing::HasSubstr;

// Every rank runs `kinds` one after the other over one data-parallel group of
// all ranks; with servers, a reduce-scatter pushes to them and an all-gather
// pulls from them.
Program dp_sync(int workers, int servers, double bytes, const std::vector<TaskKind>& kinds) {
  Program p;
  p.world_size = workers;
  p.servers = servers;
  p.coords.resize(workers);
  Group g;
  g.dim = CommDim::dp;
  g.name = servers ? "ps0" : "dp0";
  g.servers = servers;
  g.ranks.resize(workers);
  std::iota(g.ranks.begin(), g.ranks.end(), 0);
  p.groups.push_back(g);
  for (int r = 0; r < workers; ++r) {
    for (TaskKind kind : kinds) {
      Task t;
      t.rank = r;
      t.stream = Stream::dp;
      t.kind = kind;
      t.dim = CommDim::dp;
      t.group = 0;
      t.bytes = bytes;
      const int previous = static_cast<int>(p.tasks.size()) - 1;
      p.add_task(t, kind != kinds.front() ? std::span<const int>(&previous, 1) : std::span<const int>());
    }
    p.end_rank();
  }
  return p;
}

constexpr double nic_Bps = 25e9, hop_latency = 2e-6, gradient_bytes = 512e6;

double parameter_server_seconds(int workers, int servers) {
  const Program p = dp_sync(workers, servers, gradient_bytes, {TaskKind::REDUCESCATTER, TaskKind::ALLGATHER});
  return replay(p, Fabric(one_gpu_per_node(nic_Bps / 1e9, hop_latency), workers, servers), {}, {}).step_seconds;
}

TEST(ParameterServer, ServerNicsCarryTwoNSBytes) {
  const int workers = 8;
  for (int servers : {1, 2, 4}) {
    // Push then pull: each server's NIC carries n S / k bytes each way; a
    // transfer crosses the GPU's and the server's NIC hops.
    const double expected = 2 * (workers * gradient_bytes / servers / nic_Bps + 2 * hop_latency);
    EXPECT_NEAR(parameter_server_seconds(workers, servers) / expected, 1.0, 0.01) << servers << " servers";
  }
}

TEST(ParameterServer, DoublingTheServersHalvesTheSyncWhileTheirNicsAreTheBottleneck) {
  const double one = parameter_server_seconds(16, 1), two = parameter_server_seconds(16, 2),
               four = parameter_server_seconds(16, 4);
  EXPECT_NEAR(two / one, 0.5, 0.01);
  EXPECT_NEAR(four / two, 0.5, 0.01);
}

TEST(ParameterServer, RingAllReduceBeatsOneServerForManyWorkers) {
  const int workers = 16;
  const Program ring = dp_sync(workers, 0, gradient_bytes, {TaskKind::ALLREDUCE});
  ReplayOptions options;
  options.allreduce_algorithm = Algorithm::ring;
  const Fabric fabric(one_gpu_per_node(nic_Bps / 1e9, hop_latency), workers);
  EXPECT_LT(replay(ring, fabric, {}, options).step_seconds, parameter_server_seconds(workers, 1) / 4);
}

// A data-parallel scenario of tp x pp x dp GPUs with `parallelism` fields added.
Scenario with_parallelism(int tp, int pp, int dp, const json& parallelism, int layers = 8) {
  json doc = scenario_json(tp, pp, dp, layers, "1f1b");
  doc["model"]["tie_word_embeddings"] = false;
  doc["parallelism"].update(parallelism);
  return scenario_from(doc);
}

Program program_of(const Scenario& s) { return build_program(s, build_workload(s)); }

std::vector<Task> tasks_of(const Program& p, int rank, TaskKind kind) {
  std::vector<Task> found;
  for (int id : p.rank_tasks(rank))
    if (p.tasks[id].kind == kind) found.push_back(p.tasks[id]);
  return found;
}

double dp_bytes(const Program& p, int rank) {
  double bytes = 0;
  for (int id : p.rank_tasks(rank))
    if (p.tasks[id].dim == CommDim::dp) bytes += p.tasks[id].bytes;
  return bytes;
}

TEST(ParameterServer, EachBucketIsPushedThenPulled) {
  const Scenario s = with_parallelism(1, 1, 4, {{"dp_sync", "parameter_server"}, {"parameter_servers", 2}});
  const Program p = program_of(s);
  EXPECT_EQ(p.servers, 2);
  const auto pushes = tasks_of(p, 0, TaskKind::REDUCESCATTER), pulls = tasks_of(p, 0, TaskKind::ALLGATHER);
  ASSERT_FALSE(pushes.empty());
  ASSERT_EQ(pushes.size(), pulls.size());
  EXPECT_THAT(task_name(p, pushes[0]), HasSubstr("push ps"));
  EXPECT_THAT(task_name(p, pulls[0]), HasSubstr("pull ps"));
  EXPECT_EQ(fixtures::deps_of(p, pulls[0]), std::vector<int>{pushes[0].id});
  EXPECT_EQ(p.groups[pushes[0].group].servers, 2);
  const Simulation sim = simulate(s);
  EXPECT_GT(sim.timeline.step_seconds, 0);
  bool server_link_busy = false;
  for (const LinkLoad& l : sim.timeline.busiest_links) server_link_busy |= l.link.starts_with("server");
  EXPECT_TRUE(server_link_busy);
}

TEST(DpSync, TreeAndRingAreStatedOnTheGroup) {
  for (const std::string algorithm : {"tree", "ring"}) {
    const Program p = program_of(with_parallelism(1, 1, 4, {{"dp_sync", algorithm}}));
    const auto reductions = tasks_of(p, 0, TaskKind::ALLREDUCE);
    ASSERT_FALSE(reductions.empty());
    EXPECT_EQ(p.groups[reductions[0].group].allreduce_algorithm, parse_allreduce_algorithm(algorithm));
    EXPECT_THAT(task_name(p, reductions[0]), HasSubstr(algorithm));
  }
  const Program automatic = program_of(with_parallelism(1, 1, 4, json::object()));
  EXPECT_EQ(automatic.groups[tasks_of(automatic, 0, TaskKind::ALLREDUCE)[0].group].allreduce_algorithm, std::nullopt);
}

TEST(DpSync, HierarchicalReducesWithinNodesThenAcrossThem) {
  // 16 data-parallel ranks on two 8-GPU nodes.
  const Scenario s = with_parallelism(1, 1, 16, {{"dp_sync", "hierarchical"}});
  const Program p = program_of(s);
  const auto scatters = tasks_of(p, 0, TaskKind::REDUCESCATTER), reduces = tasks_of(p, 0, TaskKind::ALLREDUCE),
             gathers = tasks_of(p, 0, TaskKind::ALLGATHER);
  ASSERT_FALSE(scatters.empty());
  ASSERT_EQ(scatters.size(), reduces.size());
  ASSERT_EQ(scatters.size(), gathers.size());
  for (size_t i = 0; i < scatters.size(); ++i) {
    EXPECT_EQ(p.groups[scatters[i].group].ranks.size(), 8u);
    EXPECT_EQ(p.groups[reduces[i].group].ranks, (std::vector<int>{0, 8}));
    EXPECT_DOUBLE_EQ(reduces[i].bytes, scatters[i].bytes / 8);
    EXPECT_EQ(fixtures::deps_of(p, reduces[i]), std::vector<int>{scatters[i].id});
    EXPECT_EQ(fixtures::deps_of(p, gathers[i]), std::vector<int>{reduces[i].id});
  }
  EXPECT_GT(simulate(s).timeline.step_seconds, 0);
}

TEST(DpSync, InconsistentChoicesAreRefused) {
  auto error = [](const json& parallelism, int tp = 1, int dp = 4) {
    try {
      with_parallelism(tp, 1, dp, parallelism);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error({{"parameter_servers", 2}}), HasSubstr("only used by dp_sync parameter_server"));
  EXPECT_THAT(error({{"dp_sync", "tree"}, {"zero_stage", 1}}), HasSubstr("reduce-scatters gradients"));
  EXPECT_THAT(error({{"dp_sync", "hierarchical"}}, 2, 3), HasSubstr("hierarchical needs every node"));
  EXPECT_THAT(error({{"dp_compression_ratio", 0.5}}), HasSubstr("dp_compression_ratio"));
}

TEST(Compression, DividesDataParallelBytesAndAddsTheStatedCompute) {
  const json plain = {{"ddp_bucket_size", 1e6}};
  json compressed = plain;
  compressed["dp_compression_ratio"] = 4;
  compressed["dp_compression_seconds_per_GB"] = 2e-3;
  const Scenario s = with_parallelism(1, 1, 2, compressed);
  const Program p = program_of(s), reference = program_of(with_parallelism(1, 1, 2, plain));
  EXPECT_NEAR(dp_bytes(p, 0), dp_bytes(reference, 0) / 4, 1e-6 * dp_bytes(p, 0));

  const auto compress = tasks_of(p, 0, TaskKind::COMPRESS), decompress = tasks_of(p, 0, TaskKind::DECOMPRESS);
  ASSERT_GT(compress.size(), 1u);
  ASSERT_EQ(compress.size(), decompress.size());
  const Simulation sim = simulate(s);
  double codec_seconds = 0;
  for (const auto* tasks : {&compress, &decompress})
    for (const Task& t : *tasks) {
      EXPECT_EQ(t.stream, Stream::compute);
      codec_seconds += sim.timeline.tasks[t.id].end - sim.timeline.tasks[t.id].start;
    }
  // Each way, every byte of uncompressed gradient costs 2 ms per GB, slower
  // only while an earlier bucket's reduction takes NCCL's SMs beside it.
  const double stated = 2 * dp_bytes(reference, 0) * 2e-3 / 1e9;
  EXPECT_GE(codec_seconds, stated * (1 - 1e-9));
  EXPECT_LE(codec_seconds, stated / (1 - compute_interference(s).nccl_sm_share));
  // Decompression follows its reduction, the optimizer follows every decompression.
  const Task optimizer = tasks_of(p, 0, TaskKind::OPT).front();
  for (const Task& t : decompress) {
    EXPECT_EQ(p.tasks[p.deps(t).front()].dim, CommDim::dp);
    const TaskDeps optimizer_deps = p.deps(optimizer);
    EXPECT_NE(std::find(optimizer_deps.begin(), optimizer_deps.end(), t.id), optimizer_deps.end());
  }
}

// Layers [begin, end) of each pipeline stage's forward tasks on the dp 0, tp 0 ranks.
std::vector<int> forward_layers(const Program& p) {
  std::vector<int> layers(p.pipeline_size, 0);
  for (const Task& t : p.tasks)
    if (t.kind == TaskKind::F && t.microbatch == 0 && p.coords[t.rank].dp == 0 && p.coords[t.rank].tp == 0)
      layers[t.stage] = t.layer_end - t.layer_begin;
  return layers;
}

TEST(PipelineLayers, ExplicitCountsAreRespected) {
  const Scenario s = with_parallelism(1, 3, 1, {{"pipeline_layers", {2, 5, 1}}});
  const Workload w = build_workload(s);
  const Program p = build_program(s, w);
  EXPECT_EQ(forward_layers(p), (std::vector<int>{2, 5, 1}));
  // The schedule-only memory estimate (used by the search) is the report's.
  const std::vector<MemoryBreakdown> memory = memory_per_pipeline_rank(s, w);
  for (int pp = 0; pp < 3; ++pp) {
    const MemoryBreakdown m = memory_for_rank(s, w, p, pp);
    EXPECT_DOUBLE_EQ(memory[pp].total_bytes(), m.total_bytes()) << "stage " << pp;
    EXPECT_EQ(memory[pp].peak_in_flight_microbatches, m.peak_in_flight_microbatches);
  }
  EXPECT_GT(memory[1].weights_bytes, memory[0].weights_bytes);
}

TEST(PipelineLayers, CountsMustMatchTheStagesAndTheModel) {
  EXPECT_THROW(with_parallelism(1, 2, 1, {{"pipeline_layers", {4, 5}}}), InputError);
  EXPECT_THROW(with_parallelism(1, 2, 1, {{"pipeline_layers", {8}}}), InputError);
  EXPECT_THROW(with_parallelism(1, 2, 1, {{"pipeline_layers", {0, 8}}}), InputError);
  EXPECT_NO_THROW(with_parallelism(1, 3, 1, {{"pipeline_layers", "auto"}}));  // 8 layers on 3 stages
}

TEST(PipelineLayers, BalancingFillsTheFastestStage) {
  EXPECT_EQ(balance_layers(8, {0, 0, 0, 0}, 1), (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(balance_layers(8, {0, 0, 0, 2.5}, 1), (std::vector<int>{3, 2, 2, 1}));
  EXPECT_EQ(balance_layers(9, {1, 0, 0, 0}, 1), (std::vector<int>{2, 3, 2, 2}));
}

// Seconds of one micro-batch through each pipeline stage.
std::vector<double> stage_seconds(const Scenario& s, const Workload& w) {
  const std::unique_ptr<CostModel> model = make_cost_model(s);
  const double layer = unit_seconds(w.layer, *model, s.training.dtype);
  std::vector<double> seconds;
  for (int layers : w.stage_layers) seconds.push_back(layers * layer);
  seconds.front() += unit_seconds(w.embedding, *model, s.training.dtype);
  seconds.back() += unit_seconds(w.head, *model, s.training.dtype);
  return seconds;
}

TEST(PipelineLayers, AutoBalancesAHeavyHeadBetterThanTheUniformSplit) {
  // A 64k vocabulary makes the logits several layers' worth of work.
  auto scenario = [](const json& layers) {
    json doc = scenario_json(1, 4, 1, 24, "1f1b");
    doc["model"]["vocab_size"] = 65536;
    doc["model"]["tie_word_embeddings"] = false;
    if (!layers.is_null()) doc["parallelism"]["pipeline_layers"] = layers;
    return scenario_from(doc);
  };
  const Scenario balanced = scenario("auto"), uniform = scenario(nullptr);
  const Workload wb = build_workload(balanced), wu = build_workload(uniform);
  EXPECT_EQ(std::accumulate(wb.stage_layers.begin(), wb.stage_layers.end(), 0), 24);
  const std::vector<double> b = stage_seconds(balanced, wb), u = stage_seconds(uniform, wu);
  const std::unique_ptr<CostModel> model = make_cost_model(balanced);
  const double layer = unit_seconds(wb.layer, *model, balanced.training.dtype);
  EXPECT_LE(*std::max_element(b.begin(), b.end()) - *std::min_element(b.begin(), b.end()), layer * (1 + 1e-9));
  EXPECT_LT(*std::max_element(b.begin(), b.end()), *std::max_element(u.begin(), u.end()));
  EXPECT_LT(wb.stage_layers.back(), wb.stage_layers.front());

  ReplayOptions free;
  free.free_communication = true;
  EXPECT_LT(simulate(balanced, free).timeline.step_seconds, simulate(uniform, free).timeline.step_seconds);
}

TEST(Diagnostics, LinksCarryWhatTheFlowsRoutedOverThem) {
  // A lone ring all-reduce: every NIC uplink carries 2 (n - 1) / n of the buffer.
  const int n = 4;
  const Program p = dp_sync(n, 0, gradient_bytes, {TaskKind::ALLREDUCE});
  ReplayOptions options;
  options.allreduce_algorithm = Algorithm::ring;
  const Timeline t = replay(p, Fabric(one_gpu_per_node(nic_Bps / 1e9, hop_latency), n), {}, options);
  ASSERT_FALSE(t.busiest_links.empty());
  for (const LinkLoad& l : t.busiest_links) {
    EXPECT_NEAR(l.bytes, 2.0 * (n - 1) / n * gradient_bytes, 1) << l.link;
    EXPECT_LE(l.bytes / (l.bytes_per_second * t.step_seconds), 1.0);
  }
}

TEST(Diagnostics, EveryReportRatesCommunicationAgainstCompute) {
  // Every TP all-reduce blocking, as before Megatron-LM's async all-reduce, over A100's NVLink (300 GB/s).
  const Simulation sim = simulate(
      load_scenario("tiny-4gpu", {"async_tensor_model_parallel_allreduce=false", "topology=dgx-a100-superpod"}));
  const StepReport& r = sim.report;
  ASSERT_EQ(r.ranks.size(), 4u);
  for (const TimeSplit& t : r.ranks) {
    EXPECT_NEAR(t.compute_seconds + t.exposed_seconds() + t.idle_seconds, r.step_seconds, 1e-12);
    EXPECT_GE(t.tp_seconds, t.exposed_tp_seconds);
  }
  EXPECT_GT(r.comm_over_compute.tp, r.exposed_over_compute.tp * 0.999);
  // TP 2 over that NVLink on a small model: exposed TP communication is over 30 % of compute on the first
  // stage; the last stage's logits add compute enough to keep it below (its wait for the tied-embedding
  // partner is idle time, not communication).
  EXPECT_GT(r.most_exposed_over_compute, exposed_comm_warning_fraction);
  EXPECT_EQ(r.ranks_over_warning, 2);
  for (int rank = 0; rank < 4; ++rank) {
    const TimeSplit& t = r.ranks[rank];
    EXPECT_EQ(t.exposed_seconds() / t.compute_seconds > exposed_comm_warning_fraction,
              sim.program.coords[rank].pp == 0)
        << "rank " << rank;
  }
  EXPECT_THAT(to_text(r), HasSubstr("WARNING"));
  EXPECT_THAT(to_text(r), HasSubstr("busiest links"));
  const json j = to_json(r);
  EXPECT_EQ(j["communication"]["ranks"].size(), 4u);
  EXPECT_EQ(j["communication"]["busiest_links"].size(), r.busiest_links.size());

  ReplayOptions free;
  free.free_communication = true;
  const StepReport quiet = simulate(load_scenario("tiny-4gpu"), free).report;
  EXPECT_EQ(quiet.ranks_over_warning, 0);
  EXPECT_THAT(to_text(quiet), testing::Not(HasSubstr("WARNING")));
}

}  // namespace
}  // namespace simtrain
